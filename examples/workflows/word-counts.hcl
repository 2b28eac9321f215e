# Fan out over files: one `wc` per file, at most two at a time, results in input order.
workflow "word-counts" {
  input "files" {
    type        = "array"
    description = "Paths of the files to count"
    items       = { type = "string" }
  }

  map "counts" {
    over        = input.files
    as          = "file"
    concurrency = 2
    cmd {
      argv = ["wc", "-w", "${file}"]
    }
  }

  output = task.counts
}
