/** Version — the CLI's version, printed by `condukt version` (kept equal to package.json by a test). */
export const VERSION = "0.1.0"
