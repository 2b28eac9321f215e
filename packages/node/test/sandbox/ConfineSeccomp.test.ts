/**
 * Seccomp: the filter's decisions on every architecture it knows, read from the very bytes bwrap
 * hands the kernel, by a classic-BPF evaluator of the few instructions it uses — so arm64 and
 * i386, which this machine cannot run, are checked too (x86-64 is checked for real by the escape
 * corpus and the attach cases in ConfineLauncher.test.ts).
 */
import { assert, describe, it } from "@effect/vitest"
import { readFileSync } from "node:fs"
import * as Seccomp from "../../src/sandbox/Seccomp.ts"

const ALLOW = "allow"

/** What the filter returns for a call: `allow`, or the errno's name. */
const decide = (program: Uint8Array, arch: number, nr: number, arg0 = 0): string => {
  const view = new DataView(program.buffer, program.byteOffset, program.byteLength)
  const data = [nr, arch, 0, 0, arg0]
  const word = (offset: number) => data[offset / 4] ?? 0
  let a = 0
  for (let pc = 0; pc * 8 < program.length;) {
    const code = view.getUint16(pc * 8, true)
    const jt = view.getUint8(pc * 8 + 2)
    const jf = view.getUint8(pc * 8 + 3)
    const k = view.getUint32(pc * 8 + 4, true)
    if (code === 0x20) {
      a = word(k)
      pc++
    } else if (code === 0x15) pc += 1 + (a === k ? jt : jf)
    else if (code === 0x35) pc += 1 + (a >>> 0 >= k ? jt : jf)
    else if (code === 0x06) return k === 0x7fff0000 ? ALLOW : ({ 1: "EPERM", 13: "EACCES" } as Record<number, string>)[k & 0xffff] ?? `ret ${k}`
    else throw new Error(`unexpected instruction ${code}`)
  }
  throw new Error("fell off the program")
}

const AF_UNIX = 1
const AF_INET = 2

describe("Seccomp: the filter", () => {
  it("refuses socket(AF_UNIX) and the attaching calls on x86-64, arm64 and i386, and nothing else", () => {
    const program = new Uint8Array(readFileSync(Seccomp.file()))
    const x86 = 0xc000003e
    const arm = 0xc00000b7
    const i386 = 0x40000003
    assert.deepStrictEqual(
      {
        x86: [decide(program, x86, 41, AF_UNIX), decide(program, x86, 41, AF_INET), ...[101, 310, 311, 312, 438].map((nr) => decide(program, x86, nr)), decide(program, x86, 39), decide(program, x86, 0x40000000 + 41, AF_INET), decide(program, x86, 434)],
        arm: [decide(program, arm, 198, AF_UNIX), decide(program, arm, 198, AF_INET), ...[117, 270, 271, 272, 438].map((nr) => decide(program, arm, nr)), decide(program, arm, 172), decide(program, arm, 434)],
        i386: [decide(program, i386, 359, AF_UNIX), decide(program, i386, 359, AF_INET), ...[26, 347, 348, 349, 438].map((nr) => decide(program, i386, nr)), decide(program, i386, 20), decide(program, i386, 102, 1), decide(program, i386, 102, 3)],
        other: decide(program, 0x40000028, 26)
      },
      {
        // socket AF_UNIX, AF_INET; ptrace, process_vm_readv, process_vm_writev, kcmp, pidfd_getfd;
        // getpid; an x32 call; pidfd_open.
        x86: ["EACCES", ALLOW, "EPERM", "EPERM", "EPERM", "EPERM", "EPERM", ALLOW, "EPERM", ALLOW],
        arm: ["EACCES", ALLOW, "EPERM", "EPERM", "EPERM", "EPERM", "EPERM", ALLOW, ALLOW],
        // …; socketcall(SYS_SOCKET), whose domain is in memory: refused whole; socketcall(SYS_CONNECT).
        i386: ["EACCES", ALLOW, "EPERM", "EPERM", "EPERM", "EPERM", "EPERM", ALLOW, "EACCES", ALLOW],
        other: ALLOW
      }
    )
  })
})
