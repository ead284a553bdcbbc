// tests/server/lan.mjs PORT STDOUT_FILE — `g4 serve --host 0.0.0.0` (docs/protocol.md, "Access"): the server
// prints a LAN URL for every non-loopback IPv4 address of this machine (as node's os.networkInterfaces sees
// them), `ready` names the first as lan_url (an http URL on a non-loopback address and the server's port, the
// kiosk's QR code), and the server answers on it. A machine without such an address skips those assertions
// and says so (then there must be no LAN line and no lan_url).
import fs from 'node:fs';
import os from 'node:os';
import { check, finish, test, connect } from './lib.mjs';

const [port, stdoutFile] = process.argv.slice(2);
const printed = fs.readFileSync(stdoutFile, 'utf8').split('\n')
  .map((l) => /^g4 serve: on the LAN: (\S+)$/.exec(l)).filter((m) => m).map((m) => m[1]);
const addrs = Object.values(os.networkInterfaces()).flat()
  .filter((a) => a && (a.family === 'IPv4' || a.family === 4) && !a.address.startsWith('127.')).map((a) => a.address);

await test('--host 0.0.0.0', async () => {
  const c = await connect(port);
  const lan = c.ready.lan_url;
  c.close();
  if (!addrs.length) {
    console.log('SKIP LAN URL assertions: this machine has no non-loopback IPv4 address');
    check('no LAN address: no LAN line and no lan_url', printed.length === 0 && lan === undefined, { printed, lan });
    return;
  }
  const want = addrs.map((a) => `http://${a}:${port}/`);
  check(`a LAN URL is printed for each non-loopback IPv4 address (${addrs.join(', ')})`,
    want.length === printed.length && want.every((u) => printed.includes(u)), { want, printed });
  check('ready.lan_url is the first printed LAN URL', lan === printed[0], { lan, printed });
  const u = new URL(lan);
  check('lan_url is an http URL on a non-loopback address and the server\'s port', u.protocol === 'http:' &&
    !u.hostname.startsWith('127.') && u.hostname !== 'localhost' && u.port === String(port) && u.pathname === '/', lan);
  const r = await fetch(new URL('/health', lan));
  check('the server answers on the LAN URL', r.status === 200 && (await r.json()).status === 'ok', r.status);
});
finish();
