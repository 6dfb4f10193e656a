// Starts dynalite (the local DynamoDB engine of the tests and the cluster
// demo) on 127.0.0.1:PORT, with tables ready at once: in memory, or kept in
// DIR (LevelDB) when one is given, to be served again by the next start.
//
//   node scripts/dynalite.js PORT [DIR]
//
// dynalite rethrows the error of a request its client abandons mid-body
// (ECONNRESET), which ends the whole process: a test that cancels a call,
// or a fault run that cuts connections to it, would take the engine down
// for every other test. Those errors concern one request only, so they are
// logged and the engine goes on; any other error still ends it.
'use strict'

const port = Number(process.argv[2])
if (!Number.isInteger(port) || port <= 0) {
  console.error('usage: node scripts/dynalite.js PORT [DIR]')
  process.exit(2)
}

process.on('uncaughtException', (err) => {
  if (err && (err.code === 'ECONNRESET' || err.code === 'EPIPE' || err.message === 'aborted')) {
    console.error(`dynalite: a client left mid-request (${err.code || err.message}); going on`)
    return
  }
  console.error(err)
  process.exit(1)
})

const dynalite = require('dynalite')
const options = { createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 }
if (process.argv[3]) options.path = process.argv[3]
const server = dynalite(options)
server.listen(port, '127.0.0.1', () => {
  console.log(`Dynalite listening at: http://127.0.0.1:${port}` + (options.path ? ` (tables in ${options.path})` : ''))
})
