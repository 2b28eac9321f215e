import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["packages/*/test/**/*.test.ts", "test/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    tags: [
      {
        name: "timing-sensitive",
        description: "Asserts a duration measured on this machine, which a loaded machine can stretch: retried",
        retry: 2
      }
    ],
    reporters: ["default", ["json", { outputFile: ".vitest-results.json" }]]
  }
})
