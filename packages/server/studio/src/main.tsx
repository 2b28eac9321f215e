/**
 * main — the Studio page's entry: its styles, and the App rendered into `#app`.
 */
import { render } from "preact"
import { App } from "./App.tsx"
import "./studio.css"

const root = document.getElementById("app")
if (root !== null) render(<App />, root)
