// canon's Connect API for TypeScript: the generated services and messages, and
// one client per service over any Connect transport (connect-web in a browser,
// connect-node in Node; Connect, gRPC or gRPC-web).
import { createClient, type Client, type Interceptor, type Transport } from "@connectrpc/connect";

import { CanonService } from "./gen/canon/v1/canon_pb.js";
import { ChatService } from "./gen/canon/v1/chat_pb.js";
import { IngestService } from "./gen/canon/v1/ingest_pb.js";
import { ProjectService } from "./gen/canon/v1/project_pb.js";
import { SearchService } from "./gen/canon/v1/search_pb.js";

export * from "./gen/canon/v1/canon_pb.js";
export * from "./gen/canon/v1/chat_pb.js";
export * from "./gen/canon/v1/ingest_pb.js";
export * from "./gen/canon/v1/project_pb.js";
export * from "./gen/canon/v1/search_pb.js";

/** Clients for every canon service over one transport. */
export interface CanonClients {
  search: Client<typeof SearchService>;
  chat: Client<typeof ChatService>;
  projects: Client<typeof ProjectService>;
  canon: Client<typeof CanonService>;
  ingest: Client<typeof IngestService>;
}

/** createCanonClients returns a client per service, all over transport. */
export function createCanonClients(transport: Transport): CanonClients {
  return {
    search: createClient(SearchService, transport),
    chat: createClient(ChatService, transport),
    projects: createClient(ProjectService, transport),
    canon: createClient(CanonService, transport),
    ingest: createClient(IngestService, transport),
  };
}

/**
 * withApiKey sends an API key (from `canon keys create`) on every call, as the
 * `Authorization: Bearer <key>` header canon reads. Give it to the transport:
 * `createGrpcWebTransport({ baseUrl, httpVersion: "1.1", interceptors: [withApiKey(key)] })`.
 * A server started with `KB_AUTH=required` (or on a non-loopback address)
 * answers Unauthenticated without one; a key it does not know is refused even
 * where keys are optional.
 */
export function withApiKey(key: string): Interceptor {
  return (next) => async (req) => {
    req.header.set("Authorization", `Bearer ${key}`);
    return next(req);
  };
}
