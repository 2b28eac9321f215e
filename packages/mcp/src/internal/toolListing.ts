/**
 * toolListing — a server's `tools/list`: every page, within bounds, and listed again after
 * `notifications/tools/list_changed` without ever running two listings at once.
 *
 * A listing follows `nextCursor` for at most `maxPages` pages, `maxTools` tools and
 * `MAX_LIST_CHARS` characters of tool definitions (as JSON), all within one deadline; past any of
 * them it fails naming the bound (a start fails with it; a refresh keeps
 * the tools it had and logs why). Refreshes are coalesced: a notification only marks the list
 * stale (a dropping queue of one), and one fiber, owned by the connection's scope, lists while it
 * is stale. So a flood of notifications costs at most the listing in flight and one more, and
 * the calls sent meanwhile are not queued behind thousands of listings.
 */
import type { ListToolsResult, Tool as McpTool } from "@modelcontextprotocol/client"
import { Effect, Queue, type Scope } from "effect"
import { ConnectFailed } from "../McpError.ts"

/** Pages one listing may take by default. */
export const MAX_TOOL_PAGES = 100

/** Tools one server may list by default. */
export const MAX_TOOLS = 10_000

/**
 * The most a server's tool definitions may weigh, as JSON (characters). Fixed: pages times
 * `maxMessageBytes` (1 GiB by default) would otherwise be the only bound on what a listing holds.
 */
export const MAX_LIST_CHARS = 32 * 1024 * 1024

/** How long one whole listing may take by default (ms). */
export const LIST_TIMEOUT_MS = 30_000

export interface Bounds {
  readonly maxPages: number
  readonly maxTools: number
  readonly timeoutMs: number
}

/** Every page of `tools/list`, within `bounds`; `page` sends one request. */
export const list = (
  page: (cursor: string | undefined) => Effect.Effect<ListToolsResult, ConnectFailed>,
  bounds: Bounds
): Effect.Effect<ReadonlyArray<McpTool>, ConnectFailed> =>
  Effect.gen(function*() {
    const tools: Array<McpTool> = []
    let cursor: string | undefined
    let pages = 0
    let chars = 0
    do {
      if (pages === bounds.maxPages) {
        return yield* new ConnectFailed({ description: `tools/list did not end after ${bounds.maxPages} pages (maxToolPages)` })
      }
      const result = yield* page(cursor)
      pages += 1
      if (tools.length + result.tools.length > bounds.maxTools) {
        return yield* new ConnectFailed({ description: `the server lists more than ${bounds.maxTools} tools (maxTools)` })
      }
      chars += JSON.stringify(result.tools).length
      if (chars > MAX_LIST_CHARS) {
        return yield* new ConnectFailed({ description: `the server's tools take more than ${MAX_LIST_CHARS} characters as JSON` })
      }
      tools.push(...result.tools)
      cursor = result.nextCursor
    } while (cursor !== undefined)
    return tools
  }).pipe(
    Effect.timeoutOption(bounds.timeoutMs),
    Effect.flatMap((found) =>
      found._tag === "Some"
        ? Effect.succeed(found.value)
        : Effect.fail(new ConnectFailed({ description: `tools/list did not finish within ${bounds.timeoutMs}ms (listTimeout)` }))
    )
  )

/**
 * Starts the refresher in the current scope: `listing` runs again each time the returned function
 * was called since the last one began, and `onToolsChanged` gets what it found; a failed listing
 * is logged and changes nothing.
 */
export const refresher = (
  server: string,
  listing: Effect.Effect<ReadonlyArray<McpTool>, ConnectFailed>,
  onToolsChanged: (tools: ReadonlyArray<McpTool>) => Effect.Effect<void>
): Effect.Effect<() => void, never, Scope.Scope> =>
  Effect.gen(function*() {
    const stale = yield* Queue.dropping<void>(1)
    const once = Effect.matchEffect(Effect.andThen(Queue.take(stale), listing), {
      onSuccess: onToolsChanged,
      onFailure: (error) =>
        Effect.logWarning(`MCP server ${server}: its tools could not be listed again (${error.description}); the previous tools are kept`)
    })
    yield* Effect.forkScoped(Effect.forever(once))
    return () => {
      Queue.offerUnsafe(stale, undefined)
    }
  })
