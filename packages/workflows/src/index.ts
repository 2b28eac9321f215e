export * as Document from "./Document.ts"
export * as Expression from "./Expression.ts"
export * as Template from "./Template.ts"
