/**
 * Studio — the page where a person watches runs, answers approvals and sees what they cost: its
 * three assets (the page, its script, its styles), built from `packages/server/studio` into the
 * package (no CDN, nothing fetched at run time) and served at `/studio` beside the API.
 *
 * The page holds no data: it is served without credentials, and every call it makes is a call to
 * the documented API with the bearer token the person signs in with, so it sees exactly what that
 * principal may see. Its headers keep it to itself: a content security policy that allows only
 * its own script, styles and the API's origin, no framing, no sniffing, no referrer.
 *
 * @since 0.1.0
 */
import { Layer } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import * as assets from "./internal/studioAssets.ts"

/**
 * Where the page is served.
 *
 * @since 0.1.0
 * @category constants
 */
export const PATH = "/studio"

const SECURITY = {
  "content-security-policy":
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; font-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "cache-control": "no-cache"
} as const

const asset = (body: string, contentType: string) =>
  HttpServerResponse.text(body, { contentType, headers: SECURITY })

/**
 * The Studio's routes: `GET /studio` the page (`/studio/` too: the router ignores a trailing slash), `/studio/studio.js` and
 * `/studio/studio.css` its assets. `Server.layer({ studio: true })` adds them.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<never, never, HttpRouter.HttpRouter> = Layer.mergeAll(
  HttpRouter.add("GET", PATH, asset(assets.html, "text/html; charset=utf-8")),
  HttpRouter.add("GET", `${PATH}/studio.js`, asset(assets.js, "text/javascript; charset=utf-8")),
  HttpRouter.add("GET", `${PATH}/studio.css`, asset(assets.css, "text/css; charset=utf-8"))
)
