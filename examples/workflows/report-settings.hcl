# Typed inputs with defaults: each keeps its type through to the output.
workflow "report-settings" {
  input "title" {
    type    = "string"
    default = "Weekly report"
  }
  input "max_items" {
    type    = "integer"
    default = 10
  }
  input "threshold" {
    type    = "number"
    default = 0.75
  }
  input "include_drafts" {
    type    = "boolean"
    default = false
  }
  input "tags" {
    type    = "array"
    items   = { type = "string" }
    default = ["ops", "on call"]
  }
  input "owner" {
    type    = "object"
    default = { name = "Ada", team = "platform" }
  }

  cmd "header" {
    argv = ["echo", "${input.title} (${input.max_items} items, first tag ${input.tags[0]})"]
  }

  output = {
    header         = task.header.stdout
    max_items      = input.max_items
    threshold      = input.threshold
    include_drafts = input.include_drafts
    last_tag       = input.tags[-1]
    owner          = input.owner.name
    big_enough     = "${input.max_items >= 5}"
  }
}
