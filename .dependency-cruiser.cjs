/**
 * The shape of the packages (issue 21, ADR 0047), checked by test/dependencies.test.ts over every
 * package's src/: no import cycles; core imports no Node module and no other Condukt package, and its
 * floors hold (internal/ helpers at the bottom, public modules, the session runtime on top); only
 * the providers package knows wire formats, and only the Node host's composition root, cli and
 * workflows import it; nothing but cli imports workflows or cli.
 */
/** @type {import("dependency-cruiser").IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: "no-circular",
      comment: "An import cycle: modules that cannot be understood, tested or loaded one at a time.",
      severity: "error",
      from: { path: "^packages/[^/]+/src/" },
      to: { circular: true }
    },
    {
      name: "core-no-node",
      comment: "@condukt/core runs on any runtime Effect runs on: no Node built-in module.",
      severity: "error",
      from: { path: "^packages/core/src/" },
      to: { dependencyTypes: ["core"] }
    },
    {
      name: "core-no-platform-node",
      comment: "@condukt/core runs on any runtime Effect runs on: no @effect/platform-node, nor the shared package.",
      severity: "error",
      from: { path: "^packages/core/src/" },
      to: { path: "(^|/)node_modules/@effect/platform-node(-shared)?/" }
    },
    {
      name: "core-no-other-package",
      comment: "@condukt/core is the bottom floor: it imports no host, provider, MCP, workflow, CLI, sandbox or testing package.",
      severity: "error",
      from: { path: "^packages/core/src/" },
      to: { path: "^packages/(?!core/)[^/]+/" }
    },
    {
      name: "core-basement",
      comment: "core's internal/ is the basement: small helpers importing only effect and each other, never a public module or the session runtime.",
      severity: "error",
      from: { path: "^packages/core/src/internal/" },
      to: { path: "^packages/core/src/(?!internal/)" }
    },
    {
      name: "core-runtime-on-top",
      comment: "core's runtime/ (the session runtime) is the top floor: only Session.ts and the runtime itself import it, no public module reaches up into it.",
      severity: "error",
      from: { path: "^packages/core/src/", pathNot: "^packages/core/src/(runtime/|Session[.]ts$)" },
      to: { path: "^packages/core/src/runtime/" }
    },
    {
      name: "providers-only-from-the-root",
      comment: "Only @condukt/providers knows wire formats; only the Node composition root, cli and workflows name it.",
      severity: "error",
      from: { path: "^packages/", pathNot: ["^packages/(providers|cli|workflows)/", "^packages/node/src/Condukt[.]ts$"] },
      to: { path: "^packages/providers/" }
    },
    {
      name: "workflows-only-from-cli",
      comment: "Nothing but the CLI imports @condukt/workflows.",
      severity: "error",
      from: { path: "^packages/", pathNot: "^packages/(workflows|cli)/" },
      to: { path: "^packages/workflows/" }
    },
    {
      name: "cli-from-nothing",
      comment: "Nothing imports @condukt/cli.",
      severity: "error",
      from: { path: "^packages/", pathNot: "^packages/cli/" },
      to: { path: "^packages/cli/" }
    }
  ],
  options: {
    parser: "swc",
    doNotFollow: { path: "node_modules" },
    exclude: { path: "(^|/)(dist|test)/" },
    enhancedResolveOptions: { exportsFields: ["exports"], conditionNames: ["import", "default"], extensions: [".ts", ".js"] }
  }
}
