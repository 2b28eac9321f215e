/**
 * Three projects (docs/decisions/0045-test-projects.md): `unit` starts no process and opens no
 * socket (test/support/unitGuard.ts makes either fail), `integration` runs real processes and
 * loopback servers, `release` packs and installs, runs whole conformance suites, and measures at
 * scale. `vitest run` runs all three; a file is in exactly one (test/projects.test.ts checks it). A
 * new file lands in `unit` unless it is listed below.
 */
import { configDefaults, defineConfig } from "vitest/config"

/** Every test file of the repository; examples/ holds one, as a user's project would. */
export const all = ["packages/*/test/**/*.test.ts", "test/**/*.test.ts", "examples/**/*.test.ts"]

/** Files that start processes or servers: real sandboxes, CLIs, MCP servers, loopback providers. */
export const integration = [
  "packages/cli/test/Cli.agent.test.ts",
  "packages/cli/test/Cli.approvalLog.test.ts",
  "packages/cli/test/Cli.approvals.test.ts",
  "packages/cli/test/Cli.durable.test.ts",
  "packages/cli/test/Cli.durableJournal.test.ts",
  "packages/cli/test/Cli.serve.test.ts",
  "packages/cli/test/Cli.test.ts",
  "packages/cli/test/ServedWorkflows.test.ts",
  "packages/cli/test/bin.test.ts",
  "packages/cluster/test/ClusterSessions.approvals.test.ts",
  "packages/cluster/test/ClusterSessions.burst.test.ts",
  "packages/cluster/test/ClusterSessions.crash.test.ts",
  "packages/cluster/test/ClusterSessions.failover.test.ts",
  "packages/cluster/test/ClusterSessions.pgFailover.test.ts",
  "packages/cluster/test/ClusterSessions.hostileIds.test.ts",
  "packages/cluster/test/ClusterSessions.processes.test.ts",
  "packages/cluster/test/Runner.timings.test.ts",
  "packages/cluster/test/SessionEntity.handover.test.ts",
  "packages/cluster/test/mailboxSweep.test.ts",
  "packages/cluster/test/SqlSessionStore.pg.test.ts",
  "packages/cluster/test/SqlSessionStore.processes.test.ts",
  "packages/mcp/test/*.test.ts",
  "packages/node/test/Condukt.test.ts",
  "packages/node/test/core/Secret.test.ts",
  "packages/node/test/core/Session.budget.test.ts",
  "packages/node/test/core/Session.secrets.test.ts",
  "packages/node/test/core/Session.test.ts",
  "packages/node/test/core/Session.tracing.test.ts",
  "packages/node/test/core/tools/Bash.test.ts",
  "packages/node/test/core/tools/Command.test.ts",
  "packages/node/test/core/tools/Edit.test.ts",
  "packages/node/test/core/tools/Read.test.ts",
  "packages/node/test/core/tools/Write.test.ts",
  "packages/node/test/SqliteClient.processes.test.ts",
  "packages/node/test/internal/processGroup.test.ts",
  "packages/node/test/internal/reaper.test.ts",
  "packages/node/test/processRunner/Node.test.ts",
  "packages/node/test/sandbox/*.test.ts",
  "packages/node/test/sessionStore/*.test.ts",
  "packages/providers/test/*.test.ts",
  "packages/providers/test/internal/providerStream.test.ts",
  "packages/sandbox-virtual/test/Conformance.test.ts",
  "packages/sandbox-virtual/test/Fairness.test.ts",
  "packages/sandbox-virtual/test/Timeout.pool.test.ts",
  "packages/server/test/**/*.test.ts",
  "packages/testing/test/Processes.test.ts",
  "packages/testing/test/FreePort.test.ts",
  "packages/workflows/test/Examples.test.ts",
  "packages/workflows/test/RunEngine.test.ts",
  "packages/workflows/test/RunEngine.fairness.test.ts",
  "packages/workflows/test/McpServers.test.ts",
  "packages/workflows/test/Workflow.test.ts",
  "packages/workflows/test/steps/*.test.ts",
  "test/approvals-crash.test.ts",
  "test/approvals-records-crash.test.ts",
  "test/browser-core.test.ts",
  "test/repeats-crash.test.ts",
  "test/examples.test.ts",
  "test/genai-spans.test.ts",
  "test/hostile-files.test.ts",
  "test/hostile-json.test.ts",
  "test/hostile-patterns.test.ts",
  "test/mcp-roots.test.ts",
  "test/off-node.test.ts",
  "test/provider-env.test.ts",
  "test/secret-leak-hunt.test.ts",
  "test/session-sandboxes.test.ts",
  "test/session-store-crash.test.ts",
  "test/sub-agents.test.ts",
  "test/typecheck.test.ts",
  "test/warnings.test.ts"
]

/** Files that check a release: the packed packages installed outside the workspace, whole suites, scale. */
export const release = [
  "packages/cluster/test/ClusterSessions.passivation.test.ts",
  "packages/cluster/test/ClusterSessions.scale.test.ts",
  "packages/core/test/Sessions.scale.test.ts",
  "packages/mcp/test/Conformance.test.ts",
  "packages/mcp/test/ConformanceRevisions.test.ts",
  "test/pack.test.ts"
]

export default defineConfig({
  test: {
    testTimeout: 60_000,
    // Vitest's default is one worker fewer than the cores: one at a time on CI's two, where most files
    // wait on processes, sockets and lock expiries. One per core took the suite from 800–900 s to
    // 560 s there; three on two cores was no faster (660 s). ADR 0045's amendment.
    maxWorkers: "100%",
    hookTimeout: 60_000,
    tags: [
      {
        name: "timing-sensitive",
        description: "Asserts a duration measured on this machine, which a loaded machine can stretch: retried",
        retry: 2
      }
    ],
    reporters: ["default", ["json", { outputFile: ".vitest-results.json" }]],
    projects: [
      {
        extends: true,
        test: {
          name: "unit",
          include: all,
          exclude: [...configDefaults.exclude, ...integration, ...release],
          setupFiles: ["test/support/unitGuard.ts"],
          // One module graph per worker, not one per file: the run takes a fifth of the time. A unit
          // file therefore owns no process-wide state (a clock, a generator, a global) it needs fresh.
          isolate: false
        }
      },
      { extends: true, test: { name: "integration", include: integration, exclude: [...configDefaults.exclude, ...release] } },
      // After the others, one file at a time: what these measure (a runner's RSS after 10,000
      // sessions, heaps at scale, a conformance suite's timings) swings with whatever runs beside.
      { extends: true, test: { name: "release", include: release, maxWorkers: 1, sequence: { groupOrder: 1 } } }
    ]
  }
})
