/**
 * A minimal chat page over a Condukt session: the AI SDK's own `useChat` with its
 * `DefaultChatTransport`, pointed at `@condukt/server`'s `POST /chat`, unchanged. It renders every
 * part of every message (text, reasoning, tool calls with their state, input and output) and lets
 * a person approve or deny a call that waits for an answer; once every request of the last message
 * is answered, `lastAssistantMessageIsCompleteWithApprovalResponses` makes the chat post again and
 * the session runs (or refuses) the call. The bearer token comes from the page's
 * `<meta name="condukt-token">`, which the program serving the page fills in.
 *
 * Bundle with esbuild (`--bundle --jsx=automatic`); examples/server/README.md.
 */
import { useChat } from "@ai-sdk/react"
import { DefaultChatTransport, lastAssistantMessageIsCompleteWithApprovalResponses, type UIMessage } from "ai"
import { type FormEvent, useState } from "react"
import { createRoot } from "react-dom/client"

const token = document.querySelector<HTMLMetaElement>('meta[name="condukt-token"]')?.content ?? ""

type Part = UIMessage["parts"][number]

/** What a tool part carries, whether its tool is declared to the client (`tool-<Name>`) or dynamic. */
interface ToolView {
  readonly name: string
  readonly state: string
  readonly input: unknown
  readonly output: unknown
  readonly errorText: string | undefined
  readonly approvalId: string | undefined
}

const toolView = (part: Part): ToolView | undefined => {
  if (part.type === "dynamic-tool") return view(part.toolName, part)
  if (part.type.startsWith("tool-")) return view(part.type.slice("tool-".length), part as ToolPart)
  return undefined
}

interface ToolPart {
  readonly state: string
  readonly input?: unknown
  readonly output?: unknown
  readonly errorText?: string
  readonly approval?: { readonly id: string }
}

const view = (name: string, part: ToolPart): ToolView => ({
  name,
  state: part.state,
  input: part.input,
  output: part.output,
  errorText: part.errorText,
  approvalId: part.approval?.id
})

const json = (value: unknown): string => typeof value === "string" ? value : JSON.stringify(value, null, 2)

function Tool(
  { tool, answer }: { readonly tool: ToolView; readonly answer: (id: string, approved: boolean) => void }
) {
  return (
    <section className="tool" data-testid="tool" data-tool={tool.name} data-state={tool.state} aria-label={`Tool call: ${tool.name}`}>
      <h3>
        {tool.name} <span data-testid="tool-state">{tool.state}</span>
      </h3>
      {tool.input === undefined ? null : <pre data-testid="tool-input">{json(tool.input)}</pre>}
      {tool.output === undefined ? null : <pre data-testid="tool-output">{json(tool.output)}</pre>}
      {tool.errorText === undefined ? null : <p data-testid="tool-error" role="alert">{tool.errorText}</p>}
      {tool.state === "approval-requested" && tool.approvalId !== undefined
        ? (
          <div role="group" aria-label={`Approve the ${tool.name} call?`}>
            <button type="button" data-testid="approve" onClick={() => answer(tool.approvalId!, true)}>Approve</button>
            <button type="button" data-testid="deny" onClick={() => answer(tool.approvalId!, false)}>Deny</button>
          </div>
        )
        : null}
    </section>
  )
}

function MessagePart(
  { part, answer }: { readonly part: Part; readonly answer: (id: string, approved: boolean) => void }
) {
  if (part.type === "text") return <p data-testid="text">{part.text}</p>
  if (part.type === "reasoning") return <p data-testid="reasoning" className="reasoning"><em>{part.text}</em></p>
  const tool = toolView(part)
  return tool === undefined ? null : <Tool tool={tool} answer={answer} />
}

function Chat() {
  const [input, setInput] = useState("")
  const { id, messages, sendMessage, addToolApprovalResponse, status, error } = useChat({
    transport: new DefaultChatTransport({ api: "/chat", headers: { authorization: `Bearer ${token}` } }),
    sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses
  })
  const answer = (id: string, approved: boolean) => void addToolApprovalResponse({ id, approved })
  const submit = (event: FormEvent) => {
    event.preventDefault()
    if (input.trim() === "") return
    void sendMessage({ text: input })
    setInput("")
  }
  return (
    <main data-testid="chat" data-chat-id={id}>
      <h1>Condukt chat</h1>
      <h2 id="messages">Messages</h2>
      <ol aria-labelledby="messages" data-testid="messages">
        {messages.map((message) => (
          <li key={message.id} data-testid="message" data-role={message.role} aria-label={`${message.role} message`}>
            {message.parts.map((part, index) => <MessagePart key={index} part={part} answer={answer} />)}
          </li>
        ))}
      </ol>
      <p role="status" data-testid="status">{status}</p>
      {error === undefined ? null : <p role="alert" data-testid="error">{error.message}</p>}
      <form onSubmit={submit}>
        <label htmlFor="message">Message</label>
        <input id="message" data-testid="input" value={input} onChange={(event) => setInput(event.target.value)} />
        <button type="submit" data-testid="send" disabled={status === "submitted" || status === "streaming"}>Send</button>
      </form>
    </main>
  )
}

createRoot(document.getElementById("root")!).render(<Chat />)
