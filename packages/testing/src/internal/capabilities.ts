/**
 * capabilities — which optional operations a sandbox backend under conformance test implements.
 * `SandboxConformance` re-exports it; it lives here so the suites, which SandboxConformance
 * imports, name it without importing SandboxConformance back.
 */

/**
 * Which optional operations the backend implements.
 *
 * @since 0.1.0
 * @category models
 */
export interface Capabilities {
  readonly glob: boolean
  readonly grep: boolean
  readonly mount: boolean
  /**
   * Whether the backend's files are the host's: `"cwd"` when its cwd is a host directory (a named
   * pipe made there is tested), `"everywhere"` when absolute paths reach the host too (`/dev/zero`
   * is tested). Left out, the hostile files are tested through a mount when `mount` is true.
   */
  readonly hostFiles?: "cwd" | "everywhere" | undefined
}
