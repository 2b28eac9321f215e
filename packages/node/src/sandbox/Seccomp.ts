/**
 * Seccomp — the filter every confined command runs under (`Confine`), handed to bwrap as a file.
 */
import * as NodeFs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"

/**
 * The syscalls each architecture the filter knows refuses (`EPERM`): attaching to another process
 * of the sandbox — `ptrace`, `process_vm_readv`/`process_vm_writev`, `kcmp`, `pidfd_getfd` (taking
 * a copy of its descriptors) — which a command could otherwise do to its launcher (same user, same
 * pid namespace: docs/decisions/0070) and write anything to the host's channel; and the number of
 * `socket`, whose `AF_UNIX` calls fail with `EACCES`.
 */
const ARCHITECTURES: ReadonlyArray<{ readonly audit: number; readonly socket: number; readonly refused: ReadonlyArray<number>; readonly socketcall?: number }> = [
  // x86-64: ptrace, process_vm_readv, process_vm_writev, kcmp, pidfd_getfd.
  { audit: 0xc000003e, socket: 41, refused: [101, 310, 311, 312, 438] },
  // arm64.
  { audit: 0xc00000b7, socket: 198, refused: [117, 270, 271, 272, 438] },
  // i386 (a 32-bit program on x86-64): `socketcall(SYS_SOCKET, …)` hides its domain in memory the
  // filter cannot read, so it is refused whole; `socket` itself is checked as elsewhere.
  { audit: 0x40000003, socket: 359, refused: [26, 347, 348, 349, 438], socketcall: 102 }
]

/** x32 calls on x86-64 (the syscall number with this bit): refused, so none slips past by number. */
const X32_BIT = 0x40000000

type Instruction = readonly [code: number, jt: number | string, jf: number | string, k: number]

/**
 * The seccomp filter every confined command runs under, as the kernel reads it (classic BPF over
 * `struct seccomp_data`): on x86-64, arm64 and i386, `socket(AF_UNIX, …)` fails with EACCES and
 * the calls that attach to another process (`ARCHITECTURES`) with EPERM; anything else, and any
 * other architecture, is allowed. A Unix socket on the host — `/var/run/docker.sock`, a D-Bus bus,
 * an agent's socket — is a door out of any filesystem fence: connecting to one needs no write
 * access to the read-only root, so only refusing the socket itself closes them all.
 * (`socketpair`, which makes a connected pair and reaches nothing, stays allowed.)
 */
const filter = (): Uint8Array => {
  const LD_W_ABS = 0x20
  const JEQ_K = 0x15
  const JGE_K = 0x35
  const RET_K = 0x06
  const ALLOW = 0x7fff0000
  const EACCES = 0x00050000 | 13
  const EPERM = 0x00050000 | 1
  const NR = 0
  const ARCH = 4
  const ARG0 = 16
  // Jump targets are labels ("allow", "eperm"…) or 0 (the next instruction), resolved below.
  const program: Array<Instruction | string> = [[LD_W_ABS, 0, 0, ARCH]]
  ARCHITECTURES.forEach((arch, i) => program.push([JEQ_K, `arch${i}`, 0, arch.audit]))
  program.push([RET_K, 0, 0, ALLOW])
  ARCHITECTURES.forEach((arch, i) => {
    program.push(`arch${i}`, [LD_W_ABS, 0, 0, NR])
    if (arch.audit === 0xc000003e) program.push([JGE_K, "eperm", 0, X32_BIT])
    for (const nr of arch.refused) program.push([JEQ_K, "eperm", 0, nr])
    if (arch.socketcall !== undefined) program.push([JEQ_K, `socketcall${i}`, 0, arch.socketcall])
    program.push([JEQ_K, "socket", "allow", arch.socket])
    if (arch.socketcall !== undefined) program.push(`socketcall${i}`, [LD_W_ABS, 0, 0, ARG0], [JEQ_K, "eacces", "allow", 1])
  })
  program.push("socket", [LD_W_ABS, 0, 0, ARG0], [JEQ_K, "eacces", "allow", 1])
  program.push("allow", [RET_K, 0, 0, ALLOW], "eperm", [RET_K, 0, 0, EPERM], "eacces", [RET_K, 0, 0, EACCES])
  const labels = new Map<string, number>()
  const code: Array<Instruction> = []
  for (const item of program) {
    if (typeof item === "string") labels.set(item, code.length)
    else code.push(item)
  }
  const jump = (target: number | string, at: number): number => {
    if (typeof target === "number") return target
    const offset = labels.get(target)! - at - 1
    if (offset < 0 || offset > 255) throw new Error(`seccomp filter: jump to ${target} out of range`)
    return offset
  }
  const bytes = new Uint8Array(code.length * 8)
  const view = new DataView(bytes.buffer)
  code.forEach(([op, jt, jf, k], i) => {
    view.setUint16(i * 8, op, true)
    view.setUint8(i * 8 + 2, jump(jt, i))
    view.setUint8(i * 8 + 3, jump(jf, i))
    view.setUint32(i * 8 + 4, k, true)
  })
  return bytes
}

let filterPath: string | undefined

/**
 * The filter's file, written once per process into a directory only this user can enter.
 *
 * @since 0.1.0
 * @category constructors
 */
export const file = (): string => {
  if (filterPath === undefined) {
    const directory = NodeFs.mkdtempSync(path.join(os.tmpdir(), "condukt-confine-"))
    const file = path.join(directory, "seccomp.bpf")
    NodeFs.writeFileSync(file, filter(), { mode: 0o600 })
    filterPath = file
  }
  return filterPath
}
