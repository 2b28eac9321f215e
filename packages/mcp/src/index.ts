export * as McpAuth from "./McpAuth.ts"
export * as McpClient from "./McpClient.ts"
export * as McpError from "./McpError.ts"
export * as McpServer from "./McpServer.ts"
