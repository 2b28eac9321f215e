export * as McpAuth from "./McpAuth.ts"
export * as McpClient from "./McpClient.ts"
export * as McpServer from "./McpServer.ts"
