// README's recipe for webpack: the API is bundled from node_modules; the runtime files are static
// assets copied next to the bundle (phonon-web/), and `base` names that folder (src/main.js).
const path = require("path");
const CopyPlugin = require("copy-webpack-plugin");
const isolation = { "Cross-Origin-Opener-Policy": "same-origin", "Cross-Origin-Embedder-Policy": "require-corp" };
module.exports = {
  mode: "production",
  entry: "./src/main.js",
  output: { path: path.resolve(__dirname, "dist"), filename: "main.js" },
  plugins: [new CopyPlugin({ patterns: [
    { from: "index.html" },
    { from: "node_modules/phonon-web", to: "phonon-web", noErrorOnMissing: true,
      filter: () => process.env.NO_RUNTIME !== "1" },
  ] })],
  devServer: { static: false, headers: isolation, port: "auto", host: "127.0.0.1", hot: false, liveReload: false,
               historyApiFallback: true },
  performance: { hints: false },
};
