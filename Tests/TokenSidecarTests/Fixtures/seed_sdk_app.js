// An app written as the seed document shows (bms-mca-oauth-sdk's getAuthorizationHeader with
// serverUrl set to the sidecar), the SDK's request re-created (the package is not installable
// here): POST {serverUrl}/authorization/v1/apps/{appId}/token with Basic clientId:secret and
// grant_type=client_credentials, then `Authorization: <header>` on a request to the protected
// API through HTTPS_PROXY (a CONNECT tunnel; the sidecar's CA from NODE_EXTRA_CA_CERTS).
// Prints JSON: the status and the header the app held.
const http = require('http');
const https = require('https');

const options = { appId: process.argv[2], clientId: process.argv[3], secret: 'not-the-real-secret', serverUrl: process.argv[4] };

function getAuthorizationHeader(options) {
  return new Promise((resolve, reject) => {
    const url = new URL(options.serverUrl + '/' + 'authorization/v1/apps/' + options.appId + '/token');
    const body = 'grant_type=client_credentials';
    const request = http.request(url, {
      method: 'POST',
      headers: {
        'Content-Type': 'application/x-www-form-urlencoded; charset=utf-8',
        'Authorization': 'Basic ' + Buffer.from(options.clientId + ':' + options.secret).toString('base64'),
        'Content-Length': Buffer.byteLength(body),
      },
    }, (response) => {
      let text = '';
      response.on('data', (chunk) => { text += chunk; });
      response.on('end', () => {
        if (response.statusCode !== 200) return reject(new Error('token endpoint answered ' + response.statusCode + ' ' + text));
        const token = JSON.parse(text);
        resolve(token.token_type + ' ' + token.access_token);
      });
    });
    request.on('error', reject);
    request.end(body);
  });
}

function viaProxy(host, path, headers) {
  const proxy = new URL(process.env.HTTPS_PROXY);
  return new Promise((resolve, reject) => {
    const connect = http.request({ host: proxy.hostname, port: proxy.port, method: 'CONNECT', path: host + ':443' });
    connect.on('connect', (response, socket) => {
      if (response.statusCode !== 200) return reject(new Error('CONNECT answered ' + response.statusCode));
      const request = https.request({ host, path, headers, socket, servername: host, agent: false,
                                      createConnection: () => require('tls').connect({ socket, servername: host }) }, (answer) => {
        answer.resume();
        answer.on('end', () => resolve(answer.statusCode));
      });
      request.on('error', reject);
      request.end();
    });
    connect.on('error', reject);
    connect.end();
  });
}

// Each PATH (argv[6]...; default /bearer/mca) SECONDS (argv[5]) apart, with a header fetched
// anew each time, as an app calls getAuthorizationHeader before each request.
const pause = Number(process.argv[5] || 0);
const paths = process.argv.slice(6).length ? process.argv.slice(6) : ['/bearer/mca'];
const sleep = (seconds) => new Promise((resolve) => setTimeout(resolve, seconds * 1000));

(async () => {
  const statuses = [], held = [];
  for (const [index, path] of paths.entries()) {
    if (index) await sleep(pause);
    const header = await getAuthorizationHeader(options);
    statuses.push(await viaProxy('api.mca.test', path, { Authorization: header }));
    held.push(header);
  }
  console.log(JSON.stringify({ statuses, held }));
})().catch((error) => { console.error(error.message); process.exit(1); });
