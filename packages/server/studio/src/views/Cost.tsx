import type { Client } from "../client.ts"
/** A placeholder until helper G's view arrives. */
export function CostView(_props: { client: Client }) { return <p>Cost</p> }
