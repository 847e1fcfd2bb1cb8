// The desk's figures as inline SVG charts, each with a title and a description a screen reader reads.
const SVG = "http://www.w3.org/2000/svg";
const COLOURS = { approved: "#1d6b35", rejected: "#8a1c1c", corrected: "#6b3fa0", held: "#0b5cad", passed: "#8a5a00", interval: "#d6c5a6" };
let charts = 0;

function svg(tag, attributes = {}, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, String(value));
  if (text !== undefined) node.textContent = text;
  return node;
}

function figure(caption, description, width, height, draw, legend) {
  charts += 1;
  const titleId = `chart-title-${charts}`;
  const descId = `chart-desc-${charts}`;
  const chart = svg("svg", { viewBox: `0 0 ${width} ${height}`, role: "img", "aria-labelledby": `${titleId} ${descId}` });
  chart.append(svg("title", { id: titleId }, caption), svg("desc", { id: descId }, description));
  draw(chart);
  const node = document.createElement("figure");
  const label = document.createElement("figcaption");
  label.textContent = caption;
  const key = document.createElement("ul");
  key.className = "legend";
  for (const [name, colour] of legend) {
    const item = document.createElement("li");
    const swatch = document.createElement("span");
    swatch.className = "swatch";
    swatch.style.background = colour;
    item.append(swatch, document.createTextNode(name));
    key.append(item);
  }
  node.append(label, chart, key);
  return node;
}

export function decisionsChart(days) {
  const width = 360;
  const height = 200;
  const base = 170;
  const most = Math.max(1, ...days.map((d) => d.approved + d.rejected + d.corrected));
  const slot = days.length ? Math.min(60, (width - 40) / days.length) : 60;
  const description = days.length
    ? days.map((d) => `${d.day}: ${d.approved} approved, ${d.rejected} rejected, ${d.corrected} corrected`).join("; ")
    : "No decisions yet.";
  return figure(
    "Decisions per day",
    description,
    width,
    height,
    (chart) => {
      chart.append(svg("line", { x1: 30, y1: base, x2: width - 5, y2: base, stroke: "#4a5560" }));
      chart.append(svg("text", { x: 2, y: 20, "font-size": 11, fill: "#1b1f24" }, String(most)));
      chart.append(svg("text", { x: 2, y: base, "font-size": 11, fill: "#1b1f24" }, "0"));
      days.forEach((day, index) => {
        let top = base;
        const x = 35 + index * slot;
        for (const outcome of ["approved", "rejected", "corrected"]) {
          const h = (day[outcome] / most) * (base - 20);
          if (h > 0) {
            top -= h;
            chart.append(svg("rect", { x, y: top, width: slot * 0.7, height: h, fill: COLOURS[outcome] }));
          }
        }
        chart.append(svg("text", { x, y: base + 14, "font-size": 10, fill: "#1b1f24" }, day.day.slice(5)));
      });
      if (!days.length) chart.append(svg("text", { x: 40, y: 90, "font-size": 13, fill: "#4a5560" }, "No decisions yet"));
    },
    [["approved", COLOURS.approved], ["rejected", COLOURS.rejected], ["corrected", COLOURS.corrected]],
  );
}

const percent = (share) => `${Math.round(share * 100)}%`;

// A share read from `count` decisions, in words: the share and its count, or why there is none to read.
// Below `readableFrom` decisions (the API's readable_sample) a share is too uncertain to be a figure.
function shareText(share, count, readableFrom) {
  if (!count) return "none decided";
  if (count < readableFrom) return `too few to read (${count} decided)`;
  return `${percent(share)} of ${count}`;
}

// `label` names a screen as staff read it (the screens' table, from /staff/desk). A bar is drawn only from
// `readableFrom` decisions or more: one decision would draw a 100% bar that says nothing.
export function agreementChart(overall, screens, label = (name) => name, readableFrom = 1) {
  // Only the screens that held something: one that never fired has no held share to compare.
  const rows = [["All screens", overall], ...Object.entries(screens).filter(([, a]) => a.held).map(([name, a]) => [label(name), a])];
  const width = 360;
  const rowHeight = 44;
  const height = 20 + rows.length * rowHeight;
  const description = rows
    .map(([name, a]) => `${name}: staff rejected, of the replies held, ${shareText(a.held_rejected_share, a.held, readableFrom)}; of those passed, ${shareText(a.passed_rejected_share, a.passed, readableFrom)}`)
    .join("; ");
  return figure(
    "The screens against staff decisions",
    description,
    width,
    height,
    (chart) => {
      rows.forEach(([name, a], index) => {
        const y = 10 + index * rowHeight;
        chart.append(svg("text", { x: 0, y: y + 10, "font-size": 11, fill: "#1b1f24" }, name));
        const bars = [["held", a.held_rejected_share, a.held], ["passed", a.passed_rejected_share, a.passed]];
        bars.forEach(([kind, share, count], offset) => {
          const top = y + 14 + offset * 12;
          const readable = count >= readableFrom && share !== null;
          const w = readable ? share * 280 : 0;
          if (readable) chart.append(svg("rect", { x: 0, y: top, width: Math.max(w, 1), height: 10, fill: COLOURS[kind] }));
          else chart.append(svg("rect", { x: 0.5, y: top + 0.5, width: 9, height: 9, fill: "none", stroke: COLOURS[kind] }));
          const text = shareText(share, count, readableFrom);
          chart.append(svg("text", { x: (readable ? w : 10) + 5, y: top + 9, "font-size": 10, fill: "#1b1f24" }, text));
        });
      });
    },
    [["of replies the screens held, share staff rejected", COLOURS.held], ["of replies they passed, share staff rejected", COLOURS.passed]],
  );
}

// The screens' miss rate: of the shown replies staff checked (a uniform draw of them at a desk), the share
// they rejected, with its 95% interval; or, while the sample is too small to read (`missed.readable` false,
// under `readableFrom` checked), that it is.
export function missRateChart(missed, readableFrom) {
  const width = 360;
  const height = 90;
  const left = 10;
  const span = 320;
  const x = (share) => left + share * span;
  let description;
  if (!missed.checked) description = "No shown reply has been checked yet.";
  else if (!missed.readable) description = `Too few checked to read: ${missed.rejected} rejected of ${missed.checked} checked; ${readableFrom} are needed.`;
  else description = `${percent(missed.share)} of ${missed.checked} shown replies checked were rejected; 95% interval ${percent(missed.low)} to ${percent(missed.high)}.`;
  return figure(
    "Shown replies staff rejected: the screens' misses",
    description,
    width,
    height,
    (chart) => {
      if (!missed.readable) {  // no axis, no point: nothing to read off it yet
        chart.append(svg("text", { x: left, y: 25, "font-size": 12, fill: "#4a5560" }, missed.checked ? `Too few checked to read (${missed.checked} of ${readableFrom})` : "None checked yet"));
        return;
      }
      chart.append(svg("line", { x1: x(0), y1: 50, x2: x(1), y2: 50, stroke: "#4a5560" }));
      for (const tick of [0, 0.25, 0.5, 0.75, 1]) {
        chart.append(svg("line", { x1: x(tick), y1: 46, x2: x(tick), y2: 54, stroke: "#4a5560" }));
        chart.append(svg("text", { x: x(tick) - 8, y: 70, "font-size": 10, fill: "#1b1f24" }, percent(tick)));
      }
      chart.append(svg("rect", { x: x(missed.low), y: 42, width: Math.max(x(missed.high) - x(missed.low), 1), height: 16, fill: COLOURS.interval }));
      chart.append(svg("circle", { cx: x(missed.share), cy: 50, r: 5, fill: COLOURS.passed }));
      chart.append(svg("text", { x: left, y: 25, "font-size": 12, fill: "#1b1f24" }, `${percent(missed.share)} (${percent(missed.low)} to ${percent(missed.high)}), from ${missed.checked} checked`));
    },
    missed.readable ? [["the estimate", COLOURS.passed], ["its 95% interval", COLOURS.interval]] : [],
  );
}
