/** Who is signed in, and the ways to sign in and out. */
import { useQuery } from "@connectrpc/connect-query";
import { startAuthentication } from "@simplewebauthn/browser";
import { useQueryClient } from "@tanstack/react-query";
import { UserService } from "@wap/api";
import { api, Code, isCode } from "./api";

/** The signed-in user; `user` is undefined when nobody is (the query's error says why). */
export function useMe() {
  const query = useQuery(UserService.method.whoami, {}, { retry: false, staleTime: 60_000 });
  const signedOut = isCode(query.error, Code.Unauthenticated);
  return { ...query, user: query.data?.user, signedOut };
}

/** After any sign-in: forget what was cached as somebody else (or nobody). */
export function useSignedIn() {
  const queryClient = useQueryClient();
  return async () => {
    queryClient.clear();
    await queryClient.invalidateQueries();
  };
}

export async function signInWithPasskey(): Promise<void> {
  const { optionsJson } = await api.auth.beginPasskeyLogin({});
  const credential = await startAuthentication({ optionsJSON: JSON.parse(optionsJson) });
  await api.auth.finishPasskeyLogin({ credentialJson: JSON.stringify(credential) });
}

/** Where to go after signing in: only a path on this site, never another origin. */
export function safeNext(next: unknown): string {
  return typeof next === "string" && next.startsWith("/") && !next.startsWith("//") ? next : "/";
}

export function currentPath(): string {
  return window.location.pathname + window.location.search;
}
