// What every part of the engine worker shares: posting to the page, the error that ends the
// worker (Fatal: its code goes to the page), and turning any other failure into "fatal".
import { TO_PAGE } from "../messages.mjs";

export const post = (message, transfer = []) => self.postMessage(message, transfer);

export class Fatal extends Error {
  constructor(code, message) { super(message); this.code = code; }
}

export function lastLine(e) {
  const text = String(e && e.message || e).trim().split("\n");
  return text[text.length - 1];
}

// Run fn (sync or async); whatever it throws reaches the page as "fatal".
export function guard(fn) {
  try {
    const out = fn();
    if (out && out.catch) out.catch(fail);
  } catch (e) {
    fail(e);
  }
}

export function fail(e) {
  if (e instanceof Fatal) post({ kind: TO_PAGE.FATAL, code: e.code, message: e.message });
  else post({ kind: TO_PAGE.FATAL, code: "engine", message: `The engine failed: ${lastLine(e)}`, detail: String(e && e.stack || e) });
}
