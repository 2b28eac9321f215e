import type { Client } from "../client.ts"
/** A placeholder until helper G's view arrives. */
export function ApprovalsView(_props: { client: Client; route: string[] }) { return <p>Approvals</p> }
