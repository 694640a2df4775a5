// Transcript exports: plain text, JSON with word times, SRT and WebVTT subtitles.
// A transcript is {text, words: [{word, start, end}], audio_seconds} (seconds, as the engine
// gives them); `meta` is added to the JSON (model, tier, source).

export function toText(transcript) {
  return transcript.text.trim() + "\n";
}

export function toJSON(transcript, meta = {}) {
  const words = transcript.words.map(({ word, start, end }) => ({ word, start, end }));
  return JSON.stringify({ text: transcript.text, words, audio_seconds: transcript.audio_seconds, ...meta },
                        null, 1) + "\n";
}

export function toSRT(transcript) {
  return cues(transcript.words)
    .map((c, i) => `${i + 1}\n${timestamp(c.start, ",")} --> ${timestamp(c.end, ",")}\n${c.text}\n`)
    .join("\n");
}

export function toVTT(transcript) {
  return "WEBVTT\n\n" + cues(transcript.words)
    .map((c) => `${timestamp(c.start, ".")} --> ${timestamp(c.end, ".")}\n${c.text}\n`)
    .join("\n");
}

// Words -> subtitle cues: a new cue after a sentence end, a pause longer than `maxGap`, or when
// the cue would exceed `maxChars` characters or `maxSeconds`. Cues never overlap, and each
// lasts at least one 80 ms frame.
export function cues(words, { maxChars = 42, maxSeconds = 6, maxGap = 0.8 } = {}) {
  const out = [];
  let cue = null;
  for (const w of words) {
    const text = w.word.trim();
    if (!text) continue;
    const split = !cue || /[.!?]$/.test(cue.text) || w.start - cue.end > maxGap
      || cue.text.length + 1 + text.length > maxChars || w.end - cue.start > maxSeconds;
    if (split) {
      cue = { start: w.start, end: w.end, text };
      out.push(cue);
    } else {
      cue.text += " " + text;
      cue.end = w.end;
    }
  }
  for (let i = 0; i < out.length; i++) {
    const next = i + 1 < out.length ? out[i + 1].start : Infinity;
    out[i].end = Math.min(Math.max(out[i].end, out[i].start + 0.08), next);
  }
  return out;
}

export function timestamp(seconds, separator) {
  const ms = Math.max(0, Math.round(seconds * 1000));
  const pad = (n, w = 2) => String(n).padStart(w, "0");
  return `${pad(Math.floor(ms / 3600000))}:${pad(Math.floor(ms / 60000) % 60)}:` +
         `${pad(Math.floor(ms / 1000) % 60)}${separator}${pad(ms % 1000, 3)}`;
}
