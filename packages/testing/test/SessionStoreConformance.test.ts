/**
 * The SessionStore suites through the package's public entry, as a user's store would run them:
 * `run` against the memory store (`@condukt/core`'s `SessionStore.makeMemory`), the reference the
 * durable stores (DiskSessionStore, SqliteSessionStore, SqlSessionStore) keep one behaviour with.
 */
import { Layer } from "effect"
import * as SessionStore from "@condukt/core/SessionStore"
import * as SessionStoreConformance from "@condukt/testing/SessionStoreConformance"

SessionStoreConformance.run("SessionStore.makeMemory", (options) => Layer.sync(SessionStore.SessionStore, () => SessionStore.makeMemory(options)))
