# Conditional steps: deploy only when the tests pass and this is not a dry run; announce only
# after a deploy (skipped with it).
workflow "deploy" {
  input "environment" {
    type    = "string"
    enum    = ["staging", "production"]
    default = "staging"
  }
  input "dry_run" {
    type    = "boolean"
    default = true
  }

  cmd "tests" {
    argv = ["sh", "-c", "echo all tests passed"]
  }

  cmd "deploy" {
    needs = ["tests"]
    when  = "${task.tests.ok && !input.dry_run}"
    argv  = ["echo", "deployed to ${input.environment}"]
  }

  cmd "announce" {
    needs = ["deploy"]
    argv  = ["echo", "announced: ${task.deploy.stdout}"]
  }

  cmd "plan" {
    needs = ["tests"]
    when  = "${input.dry_run}"
    argv  = ["echo", "would deploy to ${input.environment}"]
  }

  output = {
    deployed  = task.deploy.stdout
    announced = task.announce.stdout
    plan      = task.plan.stdout
  }
}
