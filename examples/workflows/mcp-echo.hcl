# An MCP server's tools as workflow steps: server-everything over stdio
# (`npm install -g @modelcontextprotocol/server-everything` puts mcp-server-everything on PATH).
workflow "mcp-echo" {
  input "message" {
    type    = "string"
    default = "hello from a workflow"
  }

  mcp_server "everything" {
    transport       = "stdio"
    command         = "mcp-server-everything"
    args            = ["stdio"]
    request_timeout = 10000
  }

  tool "echo" {
    id   = "everything.echo"
    args = { message = input.message }
  }

  tool "sum" {
    id   = "everything.get-sum"
    args = { a = 20, b = 22 }
  }

  output = {
    echoed = task.echo.output
    sum    = task.sum.output
  }
}
