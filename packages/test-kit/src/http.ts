/**
 * Plain HTTP helpers: Connect unary and REST calls with fetch (HTTP/1.1), as curl or a browser
 * would make them.
 */

export interface JsonResponse {
  readonly status: number;
  readonly headers: Headers;
  // biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary JSON.
  readonly body: any;
}

export interface CallOptions {
  readonly token?: string;
  readonly cookie?: string;
  readonly headers?: Record<string, string>;
  /** Sent as is (for malformed bodies); otherwise `body` is JSON-encoded. */
  readonly rawBody?: string;
}

/** `POST /<procedure>` with a JSON body, the Connect protocol's unary call. */
export function connectCall(baseUrl: string, procedure: string, body: unknown, options: CallOptions = {}) {
  return request(baseUrl, "POST", `/${procedure}`, body, options);
}

/** A REST call; `body` undefined sends none. */
export function restCall(
  baseUrl: string,
  method: string,
  path: string,
  body?: unknown,
  options: CallOptions = {},
) {
  return request(baseUrl, method, path, body, options);
}

async function request(
  baseUrl: string,
  method: string,
  path: string,
  body: unknown,
  options: CallOptions,
): Promise<JsonResponse> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`;
  if (options.cookie !== undefined) headers.cookie = options.cookie;
  const payload = options.rawBody ?? (body === undefined ? undefined : JSON.stringify(body));
  if (payload !== undefined && headers["content-type"] === undefined)
    headers["content-type"] = "application/json";
  const res = await fetch(`${baseUrl}${path}`, { method, headers, body: payload });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = text === "" ? undefined : JSON.parse(text);
  } catch {
    // Not JSON: keep the text for the assertion message.
  }
  return { status: res.status, headers: res.headers, body: parsed };
}

let counter = 0;

/** A fresh user: Register, then Login. */
export async function signUp(baseUrl: string, name = "user") {
  counter++;
  const email = `${name}-${process.pid}-${counter}@example.com`;
  const password = "correct horse battery staple";
  const username = `${name}${counter}`;
  const registered = await restCall(baseUrl, "POST", "/v1/register", {
    name: `${name} tester`,
    email,
    username,
    password,
  });
  if (registered.status !== 200) throw new Error(`register failed: ${JSON.stringify(registered.body)}`);
  const login = await restCall(baseUrl, "POST", "/v1/login", { email, password });
  if (login.status !== 200) throw new Error(`login failed: ${JSON.stringify(login.body)}`);
  return {
    email,
    password,
    accessToken: login.body.accessToken as string,
    refreshToken: login.body.refreshToken as string,
  };
}

/** A user with a workspace of their own. */
export async function signUpWithWorkspace(baseUrl: string, name = "owner") {
  const user = await signUp(baseUrl, name);
  const created = await restCall(
    baseUrl,
    "POST",
    "/v1/workspaces",
    { name: `${name} workspace` },
    { token: user.accessToken },
  );
  if (created.status !== 200) throw new Error(`create workspace failed: ${JSON.stringify(created.body)}`);
  return { ...user, workspaceId: created.body.workspace.id as string };
}
