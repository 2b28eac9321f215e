/**
 * Seccomp — the filter every confined command runs under (`Confine`), handed to bwrap as a file.
 *
 * It closes what the mounts and namespaces leave open (docs/decisions/0075): the host's Unix
 * sockets, which a read-only root does not fence (connecting needs no write access), by every way
 * a command could get one — `socket`, io_uring's `IORING_OP_SOCKET`, a datagram `socketpair`
 * re-addressed with `connect`/`sendto`, i386's `socketcall`, x32's numbers; the hypervisor's vsock,
 * which no network namespace fences; attaching to another process of the sandbox (its launcher:
 * docs/decisions/0070); and the program's keyrings. An architecture it does not know is killed.
 */
import * as NodeFs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"

/** The syscall numbers the filter judges, per architecture (from the kernel's `unistd` headers). */
interface Architecture {
  /** `AUDIT_ARCH_*`, as `seccomp_data.arch` says it. */
  readonly audit: number
  /** Node's name for it (`process.arch`), when Node runs on it. */
  readonly node: string
  /**
   * EPERM: attaching to another process — `ptrace`, `process_vm_readv`, `process_vm_writev`,
   * `kcmp`, `pidfd_getfd` (a copy of its descriptors) — and the kernel's keyrings — `add_key`,
   * `request_key`, `keyctl` (a program's session keyring is its commands' too, bwrap or not).
   */
  readonly refused: ReadonlyArray<number>
  /** ENOSYS, as on a kernel without it: `io_uring_setup`, `io_uring_enter`, `io_uring_register`. */
  readonly ioUring: ReadonlyArray<number>
  readonly socket: number
  readonly socketpair: number
  /** i386's `socketcall`, whose arguments sit in memory the filter cannot read. */
  readonly socketcall?: number
  /** x86-64: every x32 call (numbers with bit 30) is refused, so none slips past by number. */
  readonly x32?: boolean
}

const IO_URING = [425, 426, 427]

const ARCHITECTURES: ReadonlyArray<Architecture> = [
  { audit: 0xc000003e, node: "x64", refused: [101, 310, 311, 312, 438, 248, 249, 250], ioUring: IO_URING, socket: 41, socketpair: 53, x32: true },
  { audit: 0xc00000b7, node: "arm64", refused: [117, 270, 271, 272, 438, 217, 218, 219], ioUring: IO_URING, socket: 198, socketpair: 199 },
  // A 32-bit program on x86-64 (or `int $0x80` from a 64-bit one).
  { audit: 0x40000003, node: "ia32", refused: [26, 347, 348, 349, 438, 286, 287, 288], ioUring: IO_URING, socket: 359, socketpair: 360, socketcall: 102 }
]

/**
 * The socket families a command may open: IPv4, IPv6 (its network namespace's, or the allow list's
 * proxy on its loopback) and netlink (its namespace's routes and links: `getaddrinfo`, `ip`).
 * Every other family fails with EACCES: `AF_UNIX` (the host's sockets), `AF_VSOCK` (the
 * hypervisor's host, past any network namespace), and the rest, which no command here needs.
 */
const FAMILIES = [2, 10, 16]

const X32_BIT = 0x40000000
const SOCK_DGRAM = 2
/** `SOCK_TYPE_MASK`: the type without `SOCK_NONBLOCK`/`SOCK_CLOEXEC`. */
const SOCK_TYPE_MASK = 0xf
/** i386 `socketcall` calls refused whole: `SYS_SOCKET`, `SYS_SOCKETPAIR` (their domain and type are in memory). */
const SOCKETCALLS = [1, 8]

type Instruction = readonly [code: number, jt: number | string, jf: number | string, k: number]

/**
 * The filter as the kernel reads it (classic BPF over `struct seccomp_data`), per architecture it
 * knows: the attaching and keyring calls fail with EPERM, io_uring with ENOSYS (programs fall back,
 * as on a kernel without it: its `IORING_OP_SOCKET` made an `AF_UNIX` socket past the check on
 * `socket`), `socket` outside `FAMILIES` with EACCES, and `socketpair` of datagram sockets with
 * EACCES: a pair's stream or seqpacket end is connected for good, but a datagram end is readdressed
 * by `connect` or `sendto`, to a host's `/dev/log` or journal socket. Anything else is allowed; an
 * architecture it does not know is killed (a 32-bit ARM program on arm64), never left unfiltered.
 */
const filter = (): Uint8Array => {
  const LD_W_ABS = 0x20
  const AND_K = 0x54
  const JEQ_K = 0x15
  const JGE_K = 0x35
  const RET_K = 0x06
  const ALLOW = 0x7fff0000
  const KILL_PROCESS = 0x80000000
  const ERRNO = 0x00050000
  const NR = 0
  const ARCH = 4
  const ARG0 = 16
  const ARG1 = 24
  // Jump targets are labels ("allow", "eperm"…) or 0 (the next instruction), resolved below.
  const program: Array<Instruction | string> = [[LD_W_ABS, 0, 0, ARCH]]
  ARCHITECTURES.forEach((arch, i) => program.push([JEQ_K, `arch${i}`, 0, arch.audit]))
  program.push([RET_K, 0, 0, KILL_PROCESS])
  ARCHITECTURES.forEach((arch, i) => {
    program.push(`arch${i}`, [LD_W_ABS, 0, 0, NR])
    if (arch.x32 === true) program.push([JGE_K, "eperm", 0, X32_BIT])
    for (const nr of arch.refused) program.push([JEQ_K, "eperm", 0, nr])
    for (const nr of arch.ioUring) program.push([JEQ_K, "enosys", 0, nr])
    program.push([JEQ_K, "socket", 0, arch.socket])
    if (arch.socketcall !== undefined) program.push([JEQ_K, `socketcall${i}`, 0, arch.socketcall])
    program.push([JEQ_K, "socketpair", "allow", arch.socketpair])
    if (arch.socketcall !== undefined) {
      program.push(`socketcall${i}`, [LD_W_ABS, 0, 0, ARG0], ...SOCKETCALLS.map((call): Instruction => [JEQ_K, "eacces", 0, call]), [RET_K, 0, 0, ALLOW])
    }
  })
  program.push("socket", [LD_W_ABS, 0, 0, ARG0], ...FAMILIES.map((family): Instruction => [JEQ_K, "allow", 0, family]), [RET_K, 0, 0, ERRNO | 13])
  program.push("socketpair", [LD_W_ABS, 0, 0, ARG1], [AND_K, 0, 0, SOCK_TYPE_MASK], [JEQ_K, "eacces", "allow", SOCK_DGRAM])
  program.push("allow", [RET_K, 0, 0, ALLOW], "eperm", [RET_K, 0, 0, ERRNO | 1], "eacces", [RET_K, 0, 0, ERRNO | 13], "enosys", [RET_K, 0, 0, ERRNO | 38])
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

/**
 * Why the filter cannot confine programs on this host (`arch`, Node's name), or undefined: on an
 * architecture it does not know, every command would be killed at its first call.
 *
 * @since 0.1.0
 * @category guards
 */
export const unsupported = (arch: string): string | undefined =>
  ARCHITECTURES.some((known) => known.node === arch)
    ? undefined
    : `the seccomp filter knows x86-64, arm64 and i386, not ${arch}`

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
