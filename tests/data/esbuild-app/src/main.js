// The API as a bundled dependency; the runtime it starts is served from phonon-web/ beside the bundle.
import { Recognizer } from "phonon-web";

const base = __NO_BASE__ ? undefined : new URL("phonon-web/", location.href);
window.check = async (wav) => {
  try {
    const r = await Recognizer.load({ base });
    const result = await r.transcribe(new Blob([wav], { type: "audio/wav" }));
    r.close();
    return { tokens: result.tokens, text: result.text };
  } catch (e) {
    return { error: { code: e.code, message: e.message } };
  }
};
document.getElementById("status").textContent = "ready";
