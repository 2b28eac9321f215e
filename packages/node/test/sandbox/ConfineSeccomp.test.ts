/**
 * Seccomp: the filter's decisions on every architecture it knows, read from the very bytes bwrap
 * hands the kernel, by a classic-BPF evaluator of the few instructions it uses — so arm64 and
 * i386, which this machine cannot run, are checked too (x86-64 and i386 are tried for real by
 * Seccomp.escapes.test.ts, and the attach cases in ConfineLauncher.test.ts).
 */
import { assert, describe, it } from "@effect/vitest"
import { readFileSync } from "node:fs"
import * as Seccomp from "../../src/sandbox/Seccomp.ts"

const ALLOW = "allow"

/** What the filter returns for a call: `allow`, `kill`, or the errno's name. */
const decide = (program: Uint8Array, arch: number, nr: number, arg0 = 0, arg1 = 0): string => {
  const view = new DataView(program.buffer, program.byteOffset, program.byteLength)
  // struct seccomp_data: nr, arch, instruction pointer (2 words), args (2 words each, low first).
  const data = [nr, arch, 0, 0, arg0, 0, arg1, 0]
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
    } else if (code === 0x54) {
      a = (a & k) >>> 0
      pc++
    } else if (code === 0x15) pc += 1 + (a === k ? jt : jf)
    else if (code === 0x35) pc += 1 + (a >>> 0 >= k ? jt : jf)
    else if (code === 0x06) {
      if (k === 0x7fff0000) return ALLOW
      if (k === 0x80000000) return "kill"
      return ({ 1: "EPERM", 13: "EACCES", 38: "ENOSYS" } as Record<number, string>)[k & 0xffff] ?? `ret ${k}`
    } else throw new Error(`unexpected instruction ${code}`)
  }
  throw new Error("fell off the program")
}

const AF_UNIX = 1
const AF_INET = 2
const AF_INET6 = 10
const AF_NETLINK = 16
const AF_VSOCK = 40
const SOCK_STREAM = 1
const SOCK_DGRAM = 2
const SOCK_SEQPACKET = 5
const SOCK_CLOEXEC = 0o2000000

/** Each architecture's numbers: socket, socketpair, the EPERM ones, getpid, pidfd_open. */
const NUMBERS = {
  x86: { audit: 0xc000003e, socket: 41, socketpair: 53, refused: [101, 310, 311, 312, 438, 248, 249, 250], getpid: 39 },
  arm: { audit: 0xc00000b7, socket: 198, socketpair: 199, refused: [117, 270, 271, 272, 438, 217, 218, 219], getpid: 172 },
  i386: { audit: 0x40000003, socket: 359, socketpair: 360, refused: [26, 347, 348, 349, 438, 286, 287, 288], getpid: 20 }
}

describe("Seccomp: the filter", () => {
  it("on x86-64, arm64 and i386: socket families, datagram pairs, io_uring, the attaching and keyring calls; other architectures are killed", () => {
    const program = new Uint8Array(readFileSync(Seccomp.file()))
    const decisions = Object.fromEntries(Object.entries(NUMBERS).map(([name, arch]) => [name, {
      socket: [AF_UNIX, AF_INET, AF_INET6, AF_NETLINK, AF_VSOCK].map((family) => decide(program, arch.audit, arch.socket, family, SOCK_STREAM)),
      socketpair: [SOCK_STREAM, SOCK_SEQPACKET, SOCK_DGRAM, SOCK_DGRAM | SOCK_CLOEXEC].map((type) => decide(program, arch.audit, arch.socketpair, AF_UNIX, type)),
      ioUring: [425, 426, 427].map((nr) => decide(program, arch.audit, nr)),
      refused: arch.refused.map((nr) => decide(program, arch.audit, nr)),
      // getpid, pidfd_open (a pidfd only signals, which a command of the sandbox may do anyway).
      allowed: [arch.getpid, 434].map((nr) => decide(program, arch.audit, nr))
    }]))
    const expected = {
      // AF_UNIX, AF_INET, AF_INET6, AF_NETLINK, AF_VSOCK.
      socket: ["EACCES", ALLOW, ALLOW, ALLOW, "EACCES"],
      // stream, seqpacket, datagram, datagram with SOCK_CLOEXEC.
      socketpair: [ALLOW, ALLOW, "EACCES", "EACCES"],
      ioUring: ["ENOSYS", "ENOSYS", "ENOSYS"],
      // ptrace, process_vm_readv, process_vm_writev, kcmp, pidfd_getfd; add_key, request_key, keyctl.
      refused: Array(8).fill("EPERM"),
      allowed: [ALLOW, ALLOW]
    }
    assert.deepStrictEqual(decisions, { x86: expected, arm: expected, i386: expected })
    const i386 = NUMBERS.i386.audit
    assert.deepStrictEqual(
      {
        // x32 (bit 30): socket(AF_INET), io_uring_setup.
        x32: [decide(program, NUMBERS.x86.audit, 0x40000000 + 41, AF_INET), decide(program, NUMBERS.x86.audit, 0x40000000 + 425)],
        // i386's socketcall: SYS_SOCKET and SYS_SOCKETPAIR refused whole (their arguments are in memory); SYS_CONNECT allowed.
        socketcall: [1, 8, 3].map((call) => decide(program, i386, 102, call)),
        // 32-bit ARM (on arm64), MIPS: killed at their first call.
        other: [decide(program, 0x40000028, 281, AF_INET), decide(program, 0x40000008, 4001)]
      },
      { x32: ["EPERM", "EPERM"], socketcall: ["EACCES", "EACCES", ALLOW], other: ["kill", "kill"] }
    )
  })

  it("says which host architectures it cannot confine", () => {
    assert.deepStrictEqual(
      ["x64", "arm64", "ia32", "riscv64"].map(Seccomp.unsupported),
      [undefined, undefined, undefined, "the seccomp filter knows x86-64, arm64 and i386, not riscv64"]
    )
  })
})
