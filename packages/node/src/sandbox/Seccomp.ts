/**
 * Seccomp — the filter every confined command runs under (`Confine`), handed to bwrap as a file.
 */
import * as NodeFs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"

/**
 * The seccomp filter every confined command runs under, as the kernel reads it (classic BPF over
 * `struct seccomp_data`): `socket(AF_UNIX, …)` fails with EACCES, on x86-64 and arm64; anything
 * else, and any other architecture, is allowed. A Unix socket on the host — `/var/run/docker.sock`,
 * a D-Bus bus, an agent's socket — is a door out of any filesystem fence: connecting to one needs
 * no write access to the read-only root, so only refusing the socket itself closes them all.
 * (`socketpair`, which makes a connected pair and reaches nothing, stays allowed.)
 */
const filter = (): Uint8Array => {
  const LD_W_ABS = 0x20
  const JEQ_K = 0x15
  const RET_K = 0x06
  const ALLOW = 0x7fff0000
  const EACCES = 0x00050000 | 13
  const program: ReadonlyArray<readonly [code: number, jt: number, jf: number, k: number]> = [
    [LD_W_ABS, 0, 0, 4], // 0: the architecture
    [JEQ_K, 0, 2, 0xc000003e], // 1: x86-64 → 2, else → 4
    [LD_W_ABS, 0, 0, 0], // 2: the syscall number
    [JEQ_K, 3, 5, 41], // 3: socket → 7, else → 9
    [JEQ_K, 0, 4, 0xc00000b7], // 4: arm64 → 5, else → 9
    [LD_W_ABS, 0, 0, 0], // 5: the syscall number
    [JEQ_K, 0, 2, 198], // 6: socket → 7, else → 9
    [LD_W_ABS, 0, 0, 16], // 7: the domain (args[0], low half)
    [JEQ_K, 1, 0, 1], // 8: AF_UNIX → 10, else → 9
    [RET_K, 0, 0, ALLOW], // 9
    [RET_K, 0, 0, EACCES] // 10
  ]
  const bytes = new Uint8Array(program.length * 8)
  const view = new DataView(bytes.buffer)
  program.forEach(([code, jt, jf, k], i) => {
    view.setUint16(i * 8, code, true)
    view.setUint8(i * 8 + 2, jt)
    view.setUint8(i * 8 + 3, jf)
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
