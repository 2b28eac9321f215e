/**
 * What each program of examples/ prints with no provider key set, and how its output is made
 * comparable: test/examples.test.ts runs them in the workspace, test/pack.test.ts the ones that
 * import Effect's Node platform from a plain npm install.
 */
/** What each prints with no provider key set; `<tmp>` and `<id>` stand for a temporary directory and a run id. */
export const expected: Record<string, string> = {
  "approval-records.ts": `open: janitor wants Bash {"command":"echo cleaned"} (ask: Bash; expires 24 h after it was asked)
Bash: approved by ada@example.com: only an echo
the call ran once: cleaned
`,
  "approvals.ts": `asked: Bash rm -rf ./build -> denied
asked: Bash echo would delete: dist/ out/ -> approved
Bash: Denied by the user: never rm -rf, list what you would delete
Bash: would delete: dist/ out/
Write: Denied by a rule: Write matches "Write"
run completed
`,
  "cluster-client.ts": `Noted: 1 in this session so far.
streamed: AgentStart TurnStart TextDelta TurnEnd AgentEnd
runner a killed
Noted: 3 in this session so far.
the history holds 6 messages
`,
  "cluster-runner.ts": `Noted: 1 in this session so far.
Noted: 2 in this session so far.
`,
  "compaction.ts": `"What is 2 + 2?": compacted 4 messages to 3
"And 3 + 3?": compacted 5 messages to 3
Messages sent with each request: 1, 3, 4
The history now: AssistantMessage, UserMessage, AssistantMessage
`,
  "demo.ts": `No ANTHROPIC_API_KEY or OPENAI_API_KEY is set: a scripted TestModel plays the model.
The tools are real; they work in <tmp>.

▶ run <id>: Write my notes, then mark the milk as bought.

── turn 1
I'll write the notes, then look at them.
→ Write {"path":"notes.md","content":"# Notes\\n\\n- TODO: buy milk\\n- call Ada\\n"}
← Wrote notes.md (4 lines, 37 bytes)

── turn 2
→ Bash {"command":"wc -l notes.md && grep -n TODO notes.md"}
→ Grep {"pattern":"Ada"}
← 4 notes.md
  3:- TODO: buy milk
  
← notes.md:4: - call Ada

── turn 3
→ Edit {"path":"notes.md","old_text":"- TODO: buy milk","new_text":"- DONE: buy milk"}
← Successfully edited notes.md
  
  \`\`\`diff
  - - TODO: buy milk
  + - DONE: buy milk
  \`\`\`

── turn 4
→ Read {"path":"notes.md"}
← # Notes
  
  - DONE: buy milk
  - call Ada
  

── turn 5
The notes are tidy: the milk is bought and Ada is still to be called.

■ completed

notes.md now reads:
# Notes

- DONE: buy milk
- call Ada

`,
  "mcp.ts": `started everything (stdio)
everything.get-sum -> The sum of 2 and 3 is 5.
everything.echo -> Echo: hi
`,
  "observability.ts": `1.2.0 starts faster.
usage: 20 in, 10 out; cost $0.000210
The collector received:
invoke_agent release-bot
  · gen_ai.operation.name="invoke_agent"
  · gen_ai.agent.name="release-bot"
  chat claude-sonnet-4-6
    · gen_ai.operation.name="chat"
    · gen_ai.provider.name="anthropic"
    · gen_ai.request.model="claude-sonnet-4-6"
    · gen_ai.response.finish_reasons=["tool-calls"]
    · gen_ai.usage.input_tokens=10
    · gen_ai.usage.output_tokens=5
  execute_tool release_notes
    · gen_ai.operation.name="execute_tool"
    · gen_ai.tool.name="release_notes"
    · gen_ai.tool.call.id="call_1"
    · gen_ai.tool.type="function"
  chat claude-sonnet-4-6
    · gen_ai.operation.name="chat"
    · gen_ai.provider.name="anthropic"
    · gen_ai.request.model="claude-sonnet-4-6"
    · gen_ai.response.finish_reasons=["stop"]
    · gen_ai.usage.input_tokens=10
    · gen_ai.usage.output_tokens=5
`,
  "persistence.ts": `> The release is on Friday.
Noted. (the session holds 2 messages)
> When is the release?
On Friday. (the session holds 4 messages)
The model's second request held 3 messages.
The store's directory holds ticket-42.json, ticket-42.log.
`,
  "providers.ts": `The server received: POST /v1/chat/completions model=llama3.2
The agent answered: Hello from a local model.
`,
  "secrets.ts": `Bash received DEPLOY_TOKEN
Bash printed: token [REDACTED:DEPLOY_TOKEN] has 12 characters
The model read: token [REDACTED:DEPLOY_TOKEN] has 12 characters
`,
  "sub-agents.ts": `AgentStart
→ researcher {"prompt":"When was the Eiffel Tower finished?"}
  [lead > researcher] AgentStart
  [lead > researcher] → submit {"answer":"In March 1889","confidence":"high"}
  [lead > researcher] ← Answer received.
  [lead > researcher] AgentEnd (completed)
← {"answer":"In March 1889","confidence":"high"}
AgentEnd (completed)
It is 330 metres tall.
usage {"inputTokens":30,"outputTokens":15}, by agent {"lead":{"inputTokens":20,"outputTokens":10},"lead/researcher":{"inputTokens":10,"outputTokens":5}}, cost $0.000245
`,
  "server.ts": `started cleanup (janitor) for ada
waiting: Bash {"command":"echo cleaned"}
approved: 204
run completed in 2 turns: Cleaned the build.
events after 0: AgentStart TurnStart TurnEnd ToolCall ApprovalRequested ToolResult TurnStart TextDelta TextDelta TextDelta TurnEnd AgentEnd
events after 5: ToolResult TurnStart TextDelta TextDelta TextDelta TurnEnd AgentEnd
`,
  "supervision.ts": `worker: start 1, crashing
worker: start 2, crashing
worker: start 3, up
supervisor: worker running after 3 starts
supervisor: Supervisor gave up: child importer needed more than 3 restarts within 60000ms
`,
  "tools.ts": `1 Write: Wrote notes.md (2 lines, 13 bytes)
2 line_count: 2
3 Bash: 13 notes.md

(exit code: 3)
4 Read: Error: Path /etc/passwd is outside allowed directories
5 Fly: Unknown tool: Fly
`,
  "virtual.ts": `The orders total 55.
restored workspace: total.txt = 55 (211 bytes of JSON)
`
}

/** `<tmp>` for a temporary directory, `<id>` for a run id. */
export const normalized = (output: string) =>
  output.replaceAll(/\/tmp\/condukt-[a-z]+-[A-Za-z0-9]+/g, "<tmp>").replaceAll(/run [0-9a-f]{8}:/g, "run <id>:")
