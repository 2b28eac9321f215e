/**
 * Typed answers on each vendor's native mechanism, each on its loopback server: the model reads
 * a.txt first, then answers; the answer's JSON Schema travels the way the vendor documents
 * (OpenAI `json_schema` strict in Chat and Responses, Gemini `responseJsonSchema`, Anthropic a
 * forced final tool), every request keeps the wire rules, and `value` is the decoded answer.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, type Layer, Schema } from "effect"
import * as Condukt from "@condukt/node/Condukt"
import type * as Provider from "../src/Provider.ts"
import * as Anthropic from "../src/Anthropic.ts"
import * as Google from "../src/Google.ts"
import * as OpenAi from "../src/OpenAi.ts"
import * as OpenAiResponses from "../src/OpenAiResponses.ts"
import * as Runs from "./agentRuns.ts"
import * as Loopback from "./loopback.ts"
import * as Rules from "./requestRules.ts"

const KEY = "sk-output-test-7d1f3b"

const Answer = Schema.Struct({ file: Schema.String, says: Schema.String })

const ANSWER_SCHEMA = {
  type: "object",
  properties: { file: { type: "string" }, says: { type: "string" } },
  required: ["file", "says"],
  additionalProperties: false
}

/** The final fixtures, their text replaced by the answer's JSON in two deltas. */
const answering = (fixture: string) => Loopback.finalWith(fixture, `{"file":"a.txt",`, `"says":"alpha"}`)

interface Vendor {
  readonly name: string
  readonly model: string
  readonly layer: (server: Loopback.Server) => Layer.Layer<never>
  readonly rules: (body: Record<string, unknown>) => Array<string>
  readonly call: string
  readonly answer: string
  /** Where a request carries the answer's schema. */
  readonly output: (body: any) => unknown
  readonly expected: unknown
}

const provider = <O extends Provider.Options>(make: (options?: O) => Layer.Layer<never, never, any>) => Loopback.provider(make, KEY)

const anthropicSse = (block: string, partial: string, stop: string) =>
  [
    `event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"claude-sonnet-4-6","usage":{"input_tokens":9,"output_tokens":1}}}\n\n`,
    `event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":${block}}\n\n`,
    `event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":${JSON.stringify(partial)}}}\n\n`,
    `event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n`,
    `event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"${stop}"},"usage":{"output_tokens":5}}\n\n`,
    `event: message_stop\ndata: {"type":"message_stop"}\n\n`
  ].join("")

const vendors: ReadonlyArray<Vendor> = [
  {
    name: "Anthropic Messages (a forced final tool)",
    model: "anthropic:claude-sonnet-4-6",
    layer: provider(Anthropic.layer),
    rules: Rules.anthropic,
    call: anthropicSse(`{"type":"tool_use","id":"call_a","name":"Read","input":{}}`, `{"path":"a.txt"}`, "tool_use"),
    answer: anthropicSse(`{"type":"tool_use","id":"call_answer","name":"answer","input":{}}`, `{"file":"a.txt","says":"alpha"}`, "tool_use"),
    output: (body) => [body.tools.at(-1), body.tool_choice],
    expected: [{
      name: "answer",
      description: "Give your final answer: call this tool once, when you are done, with the answer as its arguments.",
      input_schema: ANSWER_SCHEMA
    }, { type: "any" }]
  },
  {
    name: "OpenAI Chat Completions (json_schema, strict)",
    model: "openai:gpt-4.1-mini",
    layer: provider(OpenAi.layer),
    rules: Rules.openAiChat,
    call: [
      `data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"Read","arguments":"{\\"path\\":\\"a.txt\\",\\"offset\\":null,\\"limit\\":null}"}}]},"finish_reason":null}]}\n\n`,
      `data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}\n\n`,
      `data: [DONE]\n\n`
    ].join(""),
    answer: answering("openai-final.sse"),
    output: (body) => body.response_format,
    expected: { type: "json_schema", json_schema: { name: "answer", schema: ANSWER_SCHEMA, strict: true } }
  },
  {
    name: "OpenAI Responses (text.format json_schema, strict)",
    model: "openai-responses:gpt-5-mini",
    layer: provider(OpenAiResponses.layer),
    rules: Rules.openAiResponses,
    call: [
      `event: response.output_item.done\ndata: {"type":"response.output_item.done","sequence_number":1,"output_index":0,"item":{"id":"fc_0","type":"function_call","status":"completed","arguments":"{\\"path\\":\\"a.txt\\",\\"offset\\":null,\\"limit\\":null}","call_id":"call_a","name":"Read"}}\n\n`,
      `event: response.completed\ndata: {"type":"response.completed","sequence_number":2,"response":{"usage":{"input_tokens":9,"output_tokens":5}}}\n\n`
    ].join(""),
    answer: answering("openai-responses-final.sse"),
    output: (body) => body.text,
    expected: { format: { type: "json_schema", name: "answer", schema: ANSWER_SCHEMA, strict: true } }
  },
  {
    name: "Gemini 3 (responseJsonSchema)",
    model: "google:gemini-3-flash-preview",
    layer: provider(Google.layer),
    rules: Rules.google,
    call:
      `data: {"candidates":[{"content":{"parts":[{"functionCall":{"id":"call_a","name":"Read","args":{"path":"a.txt"}}}],"role":"model"},"finishReason":"STOP","index":0}],"responseId":"r1"}\n\n`,
    answer: answering("google-final.sse"),
    output: (body) => body.generationConfig,
    expected: { responseMimeType: "application/json", responseJsonSchema: ANSWER_SCHEMA }
  }
]

describe("typed answers on each vendor's native mechanism", () => {
  for (const vendor of vendors) {
    it.live(`${vendor.name}: a tool call, then the typed answer`, () =>
      Effect.gen(function*() {
        const { result, server } = yield* Runs.run(
          Runs.reader(vendor.model),
          vendor.layer,
          [Loopback.sse(vendor.call), Loopback.sse(vendor.answer)],
          "What does a.txt say?",
          { output: Answer }
        )
        assert.deepStrictEqual(result.value, { file: "a.txt", says: "alpha" })
        assert.strictEqual(result.finishReason, "stop")
        assert.deepStrictEqual(
          result.messages.flatMap((m) => (m._tag === "ToolResultMessage" ? [[m.name, m.isError]] : [])),
          [["Read", false]]
        )
        const [first, second] = server.requests
        assert.deepStrictEqual([vendor.output(first!.body), vendor.output(second!.body)], [vendor.expected, vendor.expected])
        assert.deepStrictEqual([vendor.rules(first!.body), vendor.rules(second!.body)], [[], []])
      }).pipe(Effect.provide(Condukt.layer)))
  }

  const WithNote = Schema.Struct({ file: Schema.String, says: Schema.String, note: Schema.optionalKey(Schema.String) })
  for (const vendor of vendors.filter((v) => v.model.startsWith("openai"))) {
    it.live(`${vendor.name}: an optional key goes nullable and required, and the null the model sends for it is absent from value`, () =>
      Effect.gen(function*() {
        const answer = vendor.answer.replaceAll(`\\"says\\":\\"alpha\\"}`, `\\"says\\":\\"alpha\\",\\"note\\":null}`)
        assert.notStrictEqual(answer, vendor.answer)
        const { result, server } = yield* Runs.run(
          Runs.reader(vendor.model),
          vendor.layer,
          [Loopback.sse(vendor.call), Loopback.sse(answer)],
          "What does a.txt say?",
          { output: WithNote }
        )
        assert.deepStrictEqual(result.value, { file: "a.txt", says: "alpha" })
        assert.strictEqual(result.text, `{"file":"a.txt","says":"alpha"}`)
        const sent: any = vendor.output(server.requests[0]!.body)
        assert.deepStrictEqual((sent.json_schema ?? sent.format).schema.properties.note, { anyOf: [{ type: "string" }, { type: "null" }] })
        assert.deepStrictEqual([vendor.rules(server.requests[0]!.body), vendor.rules(server.requests[1]!.body)], [[], []])
      }).pipe(Effect.provide(Condukt.layer)))
  }

  it.live("Gemini 2.5, which refuses a response schema beside function declarations: the answer is a submit call", () =>
    Effect.gen(function*() {
      const submit = `data: {"candidates":[{"content":{"parts":[{"functionCall":{"id":"call_s","name":"submit","args":{"file":"a.txt","says":"alpha"}}}],"role":"model"},"finishReason":"STOP","index":0}],"responseId":"r2"}\n\n`
      const gemini = vendors.find((v) => v.model.startsWith("google:"))!
      const { result, server } = yield* Runs.run(
        Runs.reader("google:gemini-2.5-flash"),
        gemini.layer,
        [Loopback.sse(gemini.call), Loopback.sse(submit)],
        "What does a.txt say?",
        { output: Answer }
      )
      assert.deepStrictEqual(result.value, { file: "a.txt", says: "alpha" })
      const [first, second] = server.requests
      assert.deepStrictEqual(first!.body.tools[0].functionDeclarations.map((d: { name: string }) => d.name), ["Read", "submit"])
      assert.deepStrictEqual([first!.body.generationConfig, second!.body.generationConfig], [undefined, undefined])
      assert.deepStrictEqual([Rules.google(first!.body), Rules.google(second!.body)], [[], []])
    }).pipe(Effect.provide(Condukt.layer)))
})
