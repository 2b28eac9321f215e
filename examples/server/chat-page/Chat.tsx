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
import {
  DefaultChatTransport,
  type DynamicToolUIPart,
  getToolName,
  isToolUIPart,
  lastAssistantMessageIsCompleteWithApprovalResponses,
  type ToolUIPart,
  type UIMessage
} from "ai"
import { type FormEvent, useState } from "react"
import { createRoot } from "react-dom/client"

const token = document.querySelector<HTMLMetaElement>('meta[name="condukt-token"]')?.content ?? ""

type Part = UIMessage["parts"][number]
type ToolPart = ToolUIPart | DynamicToolUIPart
type Answer = (id: string, approved: boolean) => void

const json = (value: unknown): string => typeof value === "string" ? value : JSON.stringify(value, null, 2)

/** A tool call: its name and state, input, output or error, and Approve / Deny while it waits. */
function Tool({ part, answer }: { readonly part: ToolPart; readonly answer: Answer }) {
  const name = getToolName(part)
  const approval = part.state === "approval-requested" ? part.approval.id : undefined
  return (
    <section className="tool" data-testid="tool" data-tool={name} data-state={part.state} aria-label={`Tool call: ${name}`}>
      <h3>
        {name} <span data-testid="tool-state">{part.state}</span>
      </h3>
      {part.input === undefined ? null : <pre data-testid="tool-input">{json(part.input)}</pre>}
      {part.state === "output-available" ? <pre data-testid="tool-output">{json(part.output)}</pre> : null}
      {part.state === "output-error" ? <p data-testid="tool-error" role="alert">{part.errorText}</p> : null}
      {approval === undefined ? null : (
        <div role="group" aria-label={`Approve the ${name} call?`}>
          <button type="button" data-testid="approve" onClick={() => answer(approval, true)}>Approve</button>
          <button type="button" data-testid="deny" onClick={() => answer(approval, false)}>Deny</button>
        </div>
      )}
    </section>
  )
}

/** One part of a message: text, reasoning or a tool call; the rest (step boundaries, sources) shows nothing. */
function MessagePart({ part, answer }: { readonly part: Part; readonly answer: Answer }) {
  if (part.type === "text") return <p data-testid="text">{part.text}</p>
  if (part.type === "reasoning") return <p data-testid="reasoning" className="reasoning"><em>{part.text}</em></p>
  return isToolUIPart(part) ? <Tool part={part} answer={answer} /> : null
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
