'use strict';
// A Koordinator RuntimeHookService peer in grpc-js, for cri4j's interop tests (driven by
// KoordinatorHookPeer.java). The service comes from runtime-hook-service.proto, loaded at run time.
//
//   node peer.js serve SOCKET PROTO
//     Serves the hook service on the unix socket SOCKET. Writes one JSON object per line to stdout:
//     {"event":"listening"}, then {"event":"call","method":M,"request":{...},"traceparent":T} for
//     every call (T: its W3C traceparent metadata, or null), before it answers. Reads one JSON command per line from stdin, answered with
//     {"event":"ok","seq":N} once in force:
//       {"seq":N,"cmd":"plan","method":M,"response":{...},"echoEnvs":bool,
//        "error":{"code":"UNAVAILABLE","message":"..."}}
//     What method M answers from now on: "response" as it is, with the request's container_envs
//     under it when "echoEnvs" (as koordlet builds its answer), or the gRPC error "error".
//     Methods without a plan answer an empty message. Exits when stdin closes.
//
//   node peer.js call SOCKET PROTO METHOD REQUEST_JSON
//     Calls METHOD once as a client and prints {"response":{...}} or {"error":{"code":N,
//     "name":"...","details":"..."}} on one line.
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');
const readline = require('readline');

const LOADER = {keepCase: true, longs: String, enums: String, defaults: false, oneofs: true};

function service(protoPath) {
  const def = grpc.loadPackageDefinition(protoLoader.loadSync(protoPath, LOADER));
  return def.runtime.v1alpha1.RuntimeHookService;
}

function emit(obj) {
  process.stdout.write(JSON.stringify(obj) + '\n');
}

function serve(socket, protoPath) {
  const svc = service(protoPath);
  const plans = {};
  const handlers = {};
  for (const method of Object.keys(svc.service)) {
    const name = svc.service[method].path.split('/').pop();
    handlers[method] = (call, callback) => {
      const traceparent = call.metadata.get('traceparent');
      emit({event: 'call', method: name, request: call.request,
        traceparent: traceparent.length ? String(traceparent[0]) : null});
      const plan = plans[name] || {};
      if (plan.error) {
        callback({code: grpc.status[plan.error.code], details: plan.error.message});
        return;
      }
      const response = JSON.parse(JSON.stringify(plan.response || {}));
      if (plan.echoEnvs) {
        response.container_envs = Object.assign({}, call.request.container_envs || {},
            response.container_envs || {});
      }
      callback(null, response);
    };
  }
  const server = new grpc.Server();
  server.addService(svc.service, handlers);
  server.bindAsync('unix://' + socket, grpc.ServerCredentials.createInsecure(), (err) => {
    if (err) {
      emit({event: 'error', message: String(err)});
      process.exit(2);
    }
    emit({event: 'listening'});
  });
  const commands = readline.createInterface({input: process.stdin});
  commands.on('line', (line) => {
    if (!line.trim()) {
      return;
    }
    const c = JSON.parse(line);
    if (c.cmd === 'plan') {
      plans[c.method] = {response: c.response, echoEnvs: !!c.echoEnvs, error: c.error};
    }
    emit({event: 'ok', seq: c.seq});
  });
  commands.on('close', () => {
    server.forceShutdown();
    process.exit(0);
  });
}

function call(socket, protoPath, method, requestJson) {
  const Client = service(protoPath);
  const client = new Client('unix://' + socket, grpc.credentials.createInsecure());
  const rpc = method.charAt(0).toLowerCase() + method.slice(1);
  const deadline = new Date(Date.now() + 20000);
  client[rpc](JSON.parse(requestJson), {deadline}, (err, response) => {
    if (err) {
      emit({error: {code: err.code, name: grpc.status[err.code], details: err.details}});
    } else {
      emit({response});
    }
    client.close();
  });
}

const [mode, socket, protoPath, ...rest] = process.argv.slice(2);
if (mode === 'serve') {
  serve(socket, protoPath);
} else if (mode === 'call') {
  call(socket, protoPath, rest[0], rest[1]);
} else {
  process.stderr.write('usage: peer.js serve SOCKET PROTO | call SOCKET PROTO METHOD JSON\n');
  process.exit(64);
}
