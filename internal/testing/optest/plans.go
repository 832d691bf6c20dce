package optest

// BasicPlan is the three-line plan engine tests and their callers start
// from: a database object, an app object that takes the database's url and
// a secret API key (env://API_KEY), and a callback entry on the shared
// "callbacks" list that takes the app's url. Provider project p1.
const BasicPlan = `
version: 1
providers:
  fake: { project: p1 }
changes:
  - id: db
    adapter: fake
    op: object
    name: db-${ctx.scope}
    fields: { size: 1 }
  - id: app
    adapter: fake
    op: object
    name: app-${ctx.scope}
    fields:
      db_url: { from: db.url }
      api_key: { secret: "env://API_KEY" }
  - id: cb
    adapter: fake
    op: item
    list: callbacks
    item: { from: app.url }
`
