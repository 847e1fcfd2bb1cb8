// Staff sign-in: the OAuth 2.0 authorization-code flow with PKCE (RFC 7636), against Cognito's managed
// login in AWS or devstack's local sign-in; the same code path for both, only /config.json differs.
// The verifier waits in sessionStorage for the round trip. The access token is kept in localStorage until
// it expires, so every tab of the console shares one sign-in, and signing out in one signs out all.

const PENDING = "desk-console-pkce";
const TOKENS = "desk-console-tokens";

function base64url(bytes) {
  let text = "";
  for (const byte of bytes) text += String.fromCharCode(byte);
  return btoa(text).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function randomText(bytes = 48) {
  return base64url(crypto.getRandomValues(new Uint8Array(bytes)));
}

async function challengeFor(verifier) {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier));
  return base64url(new Uint8Array(digest));
}

export function redirectUri() {
  return `${window.location.origin}/console`;
}

export async function beginSignIn(config) {
  const verifier = randomText();
  const stateValue = randomText(16);
  sessionStorage.setItem(PENDING, JSON.stringify({ verifier, state: stateValue }));
  const query = new URLSearchParams({
    response_type: "code",
    client_id: config.clientId,
    redirect_uri: redirectUri(),
    scope: config.scope,
    state: stateValue,
    code_challenge: await challengeFor(verifier),
    code_challenge_method: "S256",
  });
  window.location.assign(`${config.authorizeUrl}?${query}`);
}

export async function finishSignIn(config) {
  // Back from sign-in with ?code=...&state=...: exchange the code (with the verifier) for tokens.
  const query = new URLSearchParams(window.location.search);
  const code = query.get("code");
  if (!code) return null;
  window.history.replaceState(null, "", "/console");
  const pending = JSON.parse(sessionStorage.getItem(PENDING) || "null");
  sessionStorage.removeItem(PENDING);
  if (!pending || pending.state !== query.get("state")) throw new Error("The sign-in answer did not match; sign in again.");
  const response = await fetch(config.tokenUrl, {
    method: "POST",
    headers: { "Content-Type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({
      grant_type: "authorization_code",
      client_id: config.clientId,
      code,
      redirect_uri: redirectUri(),
      code_verifier: pending.verifier,
    }),
  });
  if (!response.ok) throw new Error("Signing in did not finish; sign in again.");
  const tokens = await response.json();
  const kept = { accessToken: tokens.access_token, expiresAt: Date.now() + 1000 * (tokens.expires_in || 3600) };
  localStorage.setItem(TOKENS, JSON.stringify(kept));
  return kept.accessToken;
}

export function currentToken() {
  const kept = JSON.parse(localStorage.getItem(TOKENS) || "null");
  if (!kept || kept.expiresAt <= Date.now()) {
    localStorage.removeItem(TOKENS);
    return null;
  }
  return kept.accessToken;
}

/** Call `then` when another tab signs in or out (the storage event fires in the other tabs only). */
export function onSignInChange(then) {
  window.addEventListener("storage", (event) => {
    if (event.key === TOKENS || event.key === null) then(currentToken());
  });
}

export function signOut(config) {
  localStorage.removeItem(TOKENS);
  if (config.logoutUrl) {
    const query = new URLSearchParams({ client_id: config.clientId, logout_uri: redirectUri() });
    window.location.assign(`${config.logoutUrl}?${query}`);
  } else {
    window.location.assign("/console");
  }
}
