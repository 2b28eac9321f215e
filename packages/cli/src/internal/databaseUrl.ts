/**
 * databaseUrl — how the CLI tells a Postgres database from a file in a flag (`--durable`,
 * `approvals --store`), and how it names one in a message: a URL without its password.
 */

/** Whether `where` names a Postgres database (a `postgres://` or `postgresql://` URL). */
export const isPostgres = (where: string): boolean => /^postgres(ql)?:\/\//.test(where)

/** How messages name `where`: a URL without its password, anything else as it is. */
export const location = (where: string): string => {
  if (!isPostgres(where)) return where
  const url = URL.parse(where)
  if (url === null || url.password === "") return where
  url.password = "***"
  return url.toString()
}
