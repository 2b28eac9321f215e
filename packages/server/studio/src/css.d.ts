/** Styles are imported for esbuild, which bundles them into studio.css. */
declare module "*.css"
