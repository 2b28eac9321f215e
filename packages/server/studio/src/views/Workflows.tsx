import type { Client } from "../client.ts"
/** A placeholder until helper G's view arrives. */
export function WorkflowsView(_props: { client: Client; route: string[] }) { return <p>Workflows</p> }
