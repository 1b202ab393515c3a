/**
 * Trusted documents (persisted operations): a client built with graphql-codegen's client preset
 * sends the id of a document its build registered instead of the document, and a server in
 * `only` mode runs nothing else, so no one can send it a query its clients do not make.
 *
 * The manifest (PERSISTED_DOCUMENTS_MANIFEST) is the JSON object of id: document that the client
 * preset writes (`persistedDocuments: true`, examples/generated/persisted-documents.json); ids
 * are SHA-256 hashes of the documents. It is read and every document parsed and validated
 * against the schema once, at start: a manifest that does not fit the schema stops the start.
 *
 * A request names its document by either of the two forms clients use:
 * - `documentId` (GraphQL over HTTP's persisted documents; "sha256:<hex>" or the bare hash), in
 *   the JSON body or the GET query string;
 * - `extensions.persistedQuery.sha256Hash` (Apollo Client's and Relay's persisted-query links).
 * Over WebSocket (graphql-ws), the subscribe message's `documentId` or `extensions`, with an
 * empty `query`.
 *
 * PERSISTED_DOCUMENTS: `off` (default) runs what clients send; `allow` runs a known id's
 * document, or a document sent whole; `only` runs known ids alone. A known id runs the
 * manifest's document, whatever text came with it. Automatic persisted queries (a server that
 * stores any document a client registers) are off: with trusted documents the server need not
 * remember what clients send, so it holds nothing per client and every process knows the same
 * documents.
 */
import { readFileSync } from 'node:fs';
import type { HTTPGraphQLRequest } from '@apollo/server';
import { GraphQLError, GraphQLSchema, parse, validate } from 'graphql';
import { ConfigError, type PersistedDocumentsSettings } from '../kernel/config';
import { ErrorCode, HttpError, persistedDocumentNotFound, persistedDocumentRequired } from '../kernel/errors';

/** What a request says about its document. */
export interface OperationSource {
  query?: unknown;
  documentId?: unknown;
  extensions?: unknown;
}

/** A request's document resolved: run `query` with `extensions`, or refuse it with `refusal`. */
export type Resolved =
  { query: unknown; extensions: unknown } | { refusal: { code: ErrorCode; message: string; field?: string } };

const ID_FIELD = 'documentId';
const APQ_FIELD = 'extensions.persistedQuery.sha256Hash';

/** How long an id may be shown in an error message. */
const SHOWN_ID = 80;

export class PersistedDocuments {
  constructor(
    readonly mode: PersistedDocumentsSettings['mode'],
    private readonly documents: ReadonlyMap<string, string>,
  ) {}

  /** The trusted documents of `settings`, checked against `schema`; a manifest that cannot be used is a ConfigError. */
  static load(settings: PersistedDocumentsSettings, schema: GraphQLSchema): PersistedDocuments {
    if (settings.mode === 'off' || !settings.manifestFile) return new PersistedDocuments('off', new Map());
    const file = settings.manifestFile;
    const refuse = (why: string) => new ConfigError(`PERSISTED_DOCUMENTS_MANIFEST (${file}) ${why}`);
    let manifest: unknown;
    try {
      manifest = JSON.parse(readFileSync(file, 'utf8'));
    } catch (error) {
      throw refuse(`cannot be read as JSON: ${(error as Error).message}`);
    }
    if (typeof manifest !== 'object' || manifest === null || Array.isArray(manifest))
      throw refuse('must be a JSON object of id: document');
    const documents = new Map<string, string>();
    for (const [id, document] of Object.entries(manifest)) {
      if (typeof document !== 'string') throw refuse(`holds a document that is not a string (id "${id}")`);
      let errors: readonly GraphQLError[];
      try {
        errors = validate(schema, parse(document));
      } catch (error) {
        errors = [error as GraphQLError];
      }
      if (errors.length > 0)
        throw refuse(`holds a document that does not fit the schema (id "${id}"): ${errors[0].message}`);
      // The client preset writes ids as "sha256:<hex>"; clients may send either form.
      documents.set(id.replace(/^sha256:/, ''), document);
    }
    return new PersistedDocuments(settings.mode, documents);
  }

  /** How many documents the manifest holds. */
  get size(): number {
    return this.documents.size;
  }

  /** The document a request runs, by the rules of the mode (see the top of this file). */
  resolve(source: OperationSource): Resolved {
    if (this.mode === 'off') return { query: source.query, extensions: source.extensions };
    const apq = persistedQueryOf(source.extensions);
    const named: { id: unknown; field: string } | null =
      source.documentId !== undefined && source.documentId !== null
        ? { id: source.documentId, field: ID_FIELD }
        : apq !== undefined && apq !== null
          ? { id: apq, field: APQ_FIELD }
          : null;
    const extensions = withoutPersistedQuery(source.extensions);
    const sentWhole = typeof source.query === 'string' && source.query.trim() !== '';
    if (named) {
      const document = typeof named.id === 'string' ? this.documents.get(named.id.replace(/^sha256:/, '')) : undefined;
      if (document !== undefined) return { query: document, extensions };
      if (this.mode === 'allow' && sentWhole) return { query: source.query, extensions };
      const shown =
        typeof named.id === 'string'
          ? `"${named.id.slice(0, SHOWN_ID)}"`
          : JSON.stringify(named.id)?.slice(0, SHOWN_ID);
      return {
        refusal: {
          code: ErrorCode.PERSISTED_QUERY_NOT_FOUND,
          message: `no trusted document has the id ${shown} (${named.field}): this server runs the documents its clients were built with; rebuild the client against this version of the API`,
          field: named.field,
        },
      };
    }
    if (this.mode === 'only') {
      return {
        refusal: {
          code: ErrorCode.PERSISTED_QUERY_ID_REQUIRED,
          message:
            'this server runs only trusted documents: send the id of one (documentId, or extensions.persistedQuery.sha256Hash) instead of a query',
        },
      };
    }
    return { query: source.query, extensions };
  }

  /**
   * The same for an HTTP request: its POST body, or its GET query string, rewritten to carry the
   * document itself; or the answer that refuses it. Untouched with PERSISTED_DOCUMENTS=off.
   */
  resolveHttp(request: HTTPGraphQLRequest): HTTPGraphQLRequest | HttpError {
    if (this.mode === 'off') return request;
    if (request.method === 'GET') return this.resolveSearch(request);
    const body = request.body as Record<string, unknown> | undefined;
    // Not an operation (a batch, no JSON): Apollo answers it.
    if (typeof body !== 'object' || body === null || Array.isArray(body)) return request;
    const resolved = this.resolve(body);
    if ('refusal' in resolved) return refusalOf(resolved.refusal);
    const { documentId: _documentId, extensions: _extensions, ...rest } = body;
    return {
      ...request,
      body: {
        ...rest,
        query: resolved.query,
        ...(resolved.extensions === undefined ? {} : { extensions: resolved.extensions }),
      },
    };
  }

  private resolveSearch(request: HTTPGraphQLRequest): HTTPGraphQLRequest | HttpError {
    const params = new URLSearchParams(request.search);
    let extensions: unknown;
    try {
      extensions = params.has('extensions') ? JSON.parse(params.get('extensions')!) : undefined;
    } catch {
      // Apollo answers a query string it cannot read.
      return request;
    }
    const resolved = this.resolve({
      query: params.get('query') ?? undefined,
      documentId: params.get('documentId') ?? undefined,
      extensions,
    });
    if ('refusal' in resolved) return refusalOf(resolved.refusal);
    params.delete('documentId');
    if (typeof resolved.query === 'string') params.set('query', resolved.query);
    if (resolved.extensions === undefined) params.delete('extensions');
    else params.set('extensions', JSON.stringify(resolved.extensions));
    return { ...request, search: `?${params.toString()}` };
  }
}

function persistedQueryOf(extensions: unknown): unknown {
  if (typeof extensions !== 'object' || extensions === null) return undefined;
  const persisted = (extensions as { persistedQuery?: unknown }).persistedQuery;
  return typeof persisted === 'object' && persisted !== null
    ? (persisted as { sha256Hash?: unknown }).sha256Hash
    : undefined;
}

/** The extensions without persistedQuery, which Apollo would otherwise answer (its automatic persisted queries are off). */
function withoutPersistedQuery(extensions: unknown): unknown {
  if (typeof extensions !== 'object' || extensions === null || !('persistedQuery' in extensions)) return extensions;
  const { persistedQuery: _persistedQuery, ...rest } = extensions as Record<string, unknown>;
  return Object.keys(rest).length > 0 ? rest : undefined;
}

function refusalOf(refusal: { code: ErrorCode; message: string; field?: string }): HttpError {
  return refusal.code === ErrorCode.PERSISTED_QUERY_NOT_FOUND
    ? persistedDocumentNotFound(refusal.message, refusal.field!)
    : persistedDocumentRequired(refusal.message);
}
