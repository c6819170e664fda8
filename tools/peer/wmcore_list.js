// Runs a CouchDB list function (argv[2], WMCore's workRestrictions.js as shipped in the wmagent wheel) once per
// input line: {"rows": [{id, key, doc}], "query": {...}} in, the function's output out, one line each. The list
// API CouchDB gives the function (getRow, send, toJSON) is provided here; nothing else is.
const fs = require('fs');
const readline = require('readline');

const listFunction = (0, eval)('(' + fs.readFileSync(process.argv[2], 'utf8') + ')');
const lines = readline.createInterface({ input: process.stdin, terminal: false });

lines.on('line', (line) => {
  const request = JSON.parse(line);
  const rows = request.rows;
  let next = 0;
  const sent = [];
  globalThis.getRow = () => (next < rows.length ? rows[next++] : null);
  globalThis.send = (chunk) => { sent.push(chunk); };
  globalThis.toJSON = (value) => JSON.stringify(value);
  listFunction(null, { query: request.query });
  process.stdout.write(JSON.stringify(sent.join('')) + '\n');
});
