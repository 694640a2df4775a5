// README's recipe: the runtime files are static assets (public/phonon-web/, copied there from the
// package), and threads need the isolation headers in dev and preview too.
const isolation = { "Cross-Origin-Opener-Policy": "same-origin", "Cross-Origin-Embedder-Policy": "require-corp" };
export default { base: "./", server: { headers: isolation }, preview: { headers: isolation } };
