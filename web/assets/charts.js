// The desk's figures as inline SVG charts, each with a title and a description a screen reader reads.
const SVG = "http://www.w3.org/2000/svg";
const COLOURS = { approved: "#1d6b35", rejected: "#8a1c1c", corrected: "#6b3fa0", held: "#0b5cad", passed: "#8a5a00" };
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

// `label` names a screen as staff read it (the screens' table, from /staff/desk).
export function agreementChart(overall, screens, label = (name) => name) {
  // Only the screens that held something: one that never fired has no held share to compare.
  const rows = [["All screens", overall], ...Object.entries(screens).filter(([, a]) => a.held).map(([name, a]) => [label(name), a])];
  const width = 360;
  const rowHeight = 44;
  const height = 20 + rows.length * rowHeight;
  const percent = (share) => (share === null ? "none" : `${Math.round(share * 100)}%`);
  const description = rows
    .map(([name, a]) => `${name}: staff rejected ${percent(a.held_rejected_share)} of ${a.held} held and ${percent(a.passed_rejected_share)} of ${a.passed} passed`)
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
        const bars = [["held", a.held_rejected_share], ["passed", a.passed_rejected_share]];
        bars.forEach(([kind, share], offset) => {
          const w = (share ?? 0) * 280;
          chart.append(svg("rect", { x: 0, y: y + 14 + offset * 12, width: Math.max(w, 1), height: 10, fill: COLOURS[kind] }));
          chart.append(svg("text", { x: 5 + w, y: y + 14 + offset * 12 + 9, "font-size": 10, fill: "#1b1f24" }, percent(share)));
        });
      });
    },
    [["of replies the screens held, share staff rejected", COLOURS.held], ["of replies they passed, share staff rejected", COLOURS.passed]],
  );
}
