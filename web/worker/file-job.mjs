// The engine worker's FileJob (web/worker.mjs): one file, a window per step.
import { TO_PAGE } from "../messages.mjs";
import { lastLine, post } from "./common.mjs";

// FileJob: one file, a step at a time (at most one 30 s window each): between steps this
// worker reads its messages, so progress goes out and a cancel gets in

export class FileJob {
  static async run(host, data) {
    const app = host.app;
    let seconds;
    try {
      seconds = data.wav ? app.file.prepare_wav(new Uint8Array(data.wav))
                         : app.file.prepare_pcm(data.pcm, data.rate, data.channels);
    } catch (e) {
      post({ kind: TO_PAGE.ERROR, code: "file", message: `${data.name} could not be read: ${lastLine(e)}` });
      return;
    }
    post({ kind: TO_PAGE.FILE_BUSY, name: data.name, seconds });
    const total = app.file.begin();
    const job = host.file = new FileJob(data.name);
    try {
      await job.steps(host, total);
    } finally {
      host.file = null;
      host.gpu.restoreWorkers();               // the GPU lost during the file: the workers now
    }
  }

  constructor(name) {
    this.name = name;
    this.cancelled = false;
  }

  async steps(host, total) {
    const app = host.app;
    for (;;) {
      await new Promise((resolve) => setTimeout(resolve, 0));
      if (this.cancelled) {
        app.file.cancel();
        post({ kind: TO_PAGE.FILE_CANCELLED, name: this.name });
        return;
      }
      const step = JSON.parse(await host.gpu.call(app.file.step));
      host.checkLost();
      if (step.result) {            // the last report is the whole file (step.done: rounded to 10 ms)
        post({ kind: TO_PAGE.FILE_PROGRESS, name: this.name, done: total, total });
        post({ kind: TO_PAGE.FILE_RESULT, name: this.name, result: step.result, ...host.memory() });
        return;
      }
      post({ kind: TO_PAGE.FILE_PROGRESS, name: this.name, done: step.done, total });
    }
  }
}

// ------------------------------------------------------------------------------------------
