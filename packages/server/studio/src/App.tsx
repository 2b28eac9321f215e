/**
 * App — the Studio's shell: sign-in (a bearer token, kept in sessionStorage for the tab's life,
 * checked with `GET /me`, which names the principal), the navigation between the views by hash
 * route (Workflows only when the server serves some), the light/dark toggle (the system's choice until a person picks one) and the live region
 * that reads changes out. Every view gets the one API client of the signed-in token.
 */
import { useEffect, useMemo, useState } from "preact/hooks"
import { useAnnouncement } from "./announce.ts"
import { ApiError, type Client, make } from "./client.ts"
import { href, useRoute } from "./route.ts"
import type { Me } from "./types.ts"
import { ApprovalsView } from "./views/Approvals.tsx"
import { CostView } from "./views/Cost.tsx"
import { SessionsView } from "./views/Sessions.tsx"
import { TimelineView } from "./views/Timeline.tsx"
import { WorkflowsView } from "./views/Workflows.tsx"

const TOKEN_KEY = "condukt-studio-token"
const THEME_KEY = "condukt-studio-theme"
const MAX_TOKEN_CHARS = 4096

type Theme = "light" | "dark"

const storedTheme = (): Theme | undefined => {
  const value = localStorage.getItem(THEME_KEY)
  return value === "light" || value === "dark" ? value : undefined
}

const systemTheme = (): Theme => matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light"

function ThemeToggle() {
  const [theme, setTheme] = useState<Theme | undefined>(storedTheme)
  useEffect(() => {
    if (theme === undefined) document.documentElement.removeAttribute("data-theme")
    else document.documentElement.setAttribute("data-theme", theme)
  }, [theme])
  const shown = theme ?? systemTheme()
  const next: Theme = shown === "dark" ? "light" : "dark"
  const toggle = () => {
    localStorage.setItem(THEME_KEY, next)
    document.documentElement.setAttribute("data-theme", next)
    setTheme(next)
  }
  return (
    <button type="button" class="btn" data-testid="theme-toggle" aria-pressed={shown === "dark"} onClick={toggle}>
      Dark theme
    </button>
  )
}

function SignIn(props: { onSignIn: (token: string) => void; error: string | undefined; busy: boolean }) {
  const [token, setToken] = useState("")
  const submit = (event: Event) => {
    event.preventDefault()
    if (token.trim() !== "") props.onSignIn(token.trim())
  }
  return (
    <main class="main">
      <form class="card signin" onSubmit={submit} data-testid="signin">
        <h1>Condukt Studio</h1>
        <p class="muted">Sign in with an API token of this server. The page keeps it for this tab only.</p>
        <div class="field">
          <label for="token">API token</label>
          <input id="token" type="password" autocomplete="off" maxLength={MAX_TOKEN_CHARS} data-testid="token" value={token} onInput={(event) => setToken(event.currentTarget.value)} />
        </div>
        {props.error === undefined ? null : <p role="alert" class="error" data-testid="signin-error">{props.error}</p>}
        <button type="submit" class="btn btn-primary" data-testid="signin-submit" disabled={props.busy}>Sign in</button>
      </form>
    </main>
  )
}

const VIEWS = [
  { name: "sessions", label: "Sessions" },
  { name: "approvals", label: "Approvals" },
  { name: "cost", label: "Cost" },
  { name: "workflows", label: "Workflows" }
] as const

function View(props: { client: Client; me: Me; route: string[] }) {
  const [view = "sessions", ...rest] = props.route
  switch (view) {
    case "sessions":
      return rest[0] === undefined ? <SessionsView client={props.client} me={props.me} /> : <TimelineView client={props.client} id={rest[0]} />
    case "approvals":
      return <ApprovalsView client={props.client} route={rest} />
    case "cost":
      return <CostView client={props.client} />
    case "workflows":
      return <WorkflowsView client={props.client} route={rest} />
    default:
      return <p data-testid="not-found">There is no such page here. <a href={href("sessions")}>Sessions</a></p>
  }
}

export function App() {
  const [token, setToken] = useState<string | undefined>(() => sessionStorage.getItem(TOKEN_KEY) ?? undefined)
  const [me, setMe] = useState<Me | undefined>(undefined)
  const [error, setError] = useState<string | undefined>(undefined)
  const [busy, setBusy] = useState(false)
  const route = useRoute()
  const announcement = useAnnouncement()
  const client = useMemo(() => token === undefined ? undefined : make(token), [token])

  useEffect(() => {
    if (client === undefined) return
    let live = true
    setBusy(true)
    client.me().then(
      (me) => {
        if (!live) return
        sessionStorage.setItem(TOKEN_KEY, client.token)
        setMe(me)
        setError(undefined)
      },
      (cause: unknown) => {
        if (!live) return
        sessionStorage.removeItem(TOKEN_KEY)
        setToken(undefined)
        setError(cause instanceof ApiError && cause.status === 401 ? "That token names nobody on this server." : `Signing in failed: ${String(cause instanceof Error ? cause.message : cause)}`)
      }
    ).finally(() => live && setBusy(false))
    return () => void (live = false)
  }, [client])

  const signOut = () => {
    sessionStorage.removeItem(TOKEN_KEY)
    setMe(undefined)
    setToken(undefined)
  }

  const current = route[0] ?? "sessions"
  return (
    <div class="shell">
      {/* Not a link: the hash is the page's route. */}
      <button type="button" class="skip-link" onClick={() => document.getElementById("main")?.focus()}>Skip to content</button>
      <header class="topbar">
        <p class="brand">Condukt Studio</p>
        {me === undefined ? null : (
          <nav aria-label="Studio">
            <ul class="nav">
              {VIEWS.filter((view) => view.name !== "workflows" || me.workflows).map((view) => (
                <li key={view.name}>
                  <a href={href(view.name)} data-testid={`nav-${view.name}`} aria-current={current === view.name ? "page" : undefined}>{view.label}</a>
                </li>
              ))}
            </ul>
          </nav>
        )}
        <span class="spacer" />
        {me === undefined ? null : <span data-testid="principal">Signed in as <strong>{me.principal}</strong></span>}
        <ThemeToggle />
        {me === undefined ? null : <button type="button" class="btn" data-testid="signout" onClick={signOut}>Sign out</button>}
      </header>
      {me !== undefined && client !== undefined
        ? <main id="main" tabIndex={-1} class="main" data-testid={`view-${current}`}><View client={client} me={me} route={route} /></main>
        : busy && token !== undefined
        ? <main class="main"><p class="muted" data-testid="signing-in">Signing in…</p></main>
        : <SignIn onSignIn={(token) => setToken(token)} error={error} busy={busy} />}
      <div class="sr-only" role="status" aria-live="polite" data-testid="announce">{announcement}</div>
    </div>
  )
}
