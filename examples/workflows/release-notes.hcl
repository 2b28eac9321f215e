# cmd -> agent -> http: read the changelog, have a model write release notes, post them to a webhook.
workflow "release-notes" {
  runtime {
    model = "anthropic:claude-sonnet-4-5"
  }

  input "changelog" {
    type        = "string"
    description = "Path of the changelog to summarize"
  }
  input "webhook" {
    type        = "string"
    description = "URL that receives the notes as JSON"
  }
  input "version" {
    type    = "string"
    default = "1.0.0"
  }

  cmd "changes" {
    argv = ["cat", input.changelog]
  }

  agent "notes" {
    needs  = ["changes"]
    system = "You write short, friendly release notes for users."
    input  = "Write the release notes of version ${input.version} from this changelog:\n${task.changes.stdout}"
  }

  http "publish" {
    needs         = ["notes"]
    method        = "POST"
    url           = input.webhook
    headers       = { "content-type" = "application/json", "x-release" = input.version }
    body          = { version = input.version, notes = task.notes.output }
    expect_status = [200, 201]
  }

  output = {
    status = task.publish.status
    id     = task.publish.body.id
  }
}
