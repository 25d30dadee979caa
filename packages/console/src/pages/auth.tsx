/** Signing up, in and out, and the pages mail links open: verify email, reset password, SSO. */
import { Link, useNavigate, useSearch } from "@tanstack/react-router";
import type { CheckSSOResponse } from "@wap/api";
import { SSOProvider_Type } from "@wap/api";
import { useEffect, useState } from "react";
import { api, errorMessage } from "../api";
import { safeNext, signInWithPasskey, useMe, useSignedIn } from "../session";
import { ActionForm, ErrorNote, Field, Loading, Notice, text, useAction, useDocumentTitle } from "../ui";

function AuthCard({ title, children }: { title: string; children: React.ReactNode }) {
  useDocumentTitle(title);
  return (
    <main className="auth" id="main">
      <div className="auth-card">
        <p className="brand">Workspace Access Platform</p>
        <h1 tabIndex={-1}>{title}</h1>
        {children}
      </div>
    </main>
  );
}

function useSearchParam(name: string): string {
  const search = useSearch({ strict: false }) as Record<string, unknown>;
  const value = search[name];
  return typeof value === "string" ? value : value === undefined ? "" : String(value);
}

function ssoStartUrl(provider: { type: SSOProvider_Type; id: string }, next: string): string {
  const kind = provider.type === SSOProvider_Type.SAML ? "saml" : "oidc";
  return `/v1/sso/${kind}/${encodeURIComponent(provider.id)}/start?returnTo=${encodeURIComponent(next)}`;
}

export function SignInPage() {
  const navigate = useNavigate();
  const next = safeNext(useSearchParam("next"));
  const signedIn = useSignedIn();
  const [email, setEmail] = useState("");
  const [sso, setSso] = useState<CheckSSOResponse>();
  const [mode, setMode] = useState<"password" | "backup">("password");

  // Which identity provider the email's domain uses; enforced SSO hides the other ways.
  useEffect(() => {
    setSso(undefined);
    if (!/^[^@\s]+@[^@\s]+\.[^@\s]+$/.test(email)) return;
    const timer = setTimeout(() => {
      api.sso.checkSSO({ email }).then(setSso, () => setSso(undefined));
    }, 300);
    return () => clearTimeout(timer);
  }, [email]);

  const done = async () => {
    await signedIn();
    await navigate({ to: next });
  };
  const password = useAction(async (form: FormData) => {
    if (mode === "backup") {
      await api.auth.loginWithBackupCode({ email: text(form, "email"), code: text(form, "code") });
    } else {
      await api.auth.login({ email: text(form, "email"), password: String(form.get("password") ?? "") });
    }
    await done();
  });
  const passkey = useAction(async () => {
    await signInWithPasskey();
    await done();
  });
  const enforced = sso?.enforceSso === true;

  return (
    <AuthCard title="Sign in">
      <ActionForm
        action={password}
        hideError={enforced}
        submit="Sign in"
        hideSubmit={enforced}
        label="Sign in"
      >
        <Field
          label="Email"
          name="email"
          type="email"
          autoComplete="username webauthn"
          required
          value={email}
          onChange={(e) => setEmail(e.target.value)}
        />
        {enforced && <Notice>Your organisation signs you in through its identity provider.</Notice>}
        {!enforced && mode === "password" && (
          <Field label="Password" name="password" type="password" autoComplete="current-password" required />
        )}
        {!enforced && mode === "backup" && (
          <Field label="Backup code" name="code" autoComplete="one-time-code" required />
        )}
      </ActionForm>
      {sso?.hasSso && (
        <div className="stack">
          {sso.providers.map((provider) => (
            <a key={provider.id} className="button" href={ssoStartUrl(provider, next)}>
              Continue with {provider.name}
            </a>
          ))}
        </div>
      )}
      {!enforced && (
        <div className="stack">
          <button
            type="button"
            className="secondary"
            onClick={() => void passkey.act()}
            disabled={passkey.busy}
          >
            Sign in with a passkey
          </button>
          <ErrorNote error={passkey.error} />
          <button
            type="button"
            className="link"
            onClick={() => setMode(mode === "password" ? "backup" : "password")}
          >
            {mode === "password" ? "Use a backup code instead" : "Use your password instead"}
          </button>
        </div>
      )}
      <p>
        <Link to="/forgot-password">Forgot your password?</Link> ·{" "}
        <Link to="/sign-up" search={next === "/" ? {} : { next }}>
          Create an account
        </Link>
      </p>
    </AuthCard>
  );
}

export function SignUpPage() {
  const next = safeNext(useSearchParam("next"));
  const register = useAction(async (form: FormData) => {
    const email = text(form, "email");
    const password = String(form.get("password") ?? "");
    await api.auth.register({
      name: text(form, "name"),
      email,
      username: text(form, "username"),
      password,
      ...(next !== "/" && { next }),
    });
    // Signed in at once, so that the verification link opened in this browser proves the mailbox
    // for this very session: a verification from anywhere else also removes the password (an
    // address registered by someone else must not keep their password).
    await api.auth.login({ email, password }).catch(() => undefined);
    return email;
  });
  const resend = useAction((email: string) =>
    api.auth.resendVerification({ email, ...(next !== "/" && { next }) }),
  );
  if (register.result) {
    return (
      <AuthCard title="Check your mail">
        <Notice>
          We sent a verification link to {register.result}. Open it in this browser to verify your address.
        </Notice>
        <button type="button" className="secondary" onClick={() => void resend.act(register.result!)}>
          Send the link again
        </button>
        <ErrorNote error={resend.error} />
        {next !== "/" && <p>The link brings you back to {describeNext(next)}.</p>}
        <p>
          <Link to="/sign-in" search={next === "/" ? {} : { next }}>
            Sign in
          </Link>
        </p>
      </AuthCard>
    );
  }
  return (
    <AuthCard title="Create an account">
      <ActionForm action={register} submit="Create account">
        <Field label="Name" name="name" autoComplete="name" required minLength={3} />
        <Field label="Email" name="email" type="email" autoComplete="email" required />
        <Field
          label="Username"
          name="username"
          autoComplete="username"
          required
          minLength={3}
          maxLength={32}
        />
        <Field
          label="Password"
          name="password"
          type="password"
          autoComplete="new-password"
          required
          minLength={8}
          hint="At least 8 characters."
        />
      </ActionForm>
      <p>
        Already have an account?{" "}
        <Link to="/sign-in" search={next === "/" ? {} : { next }}>
          Sign in
        </Link>
      </p>
    </AuthCard>
  );
}

export function ForgotPasswordPage() {
  const forgot = useAction((form: FormData) => api.auth.forgotPassword({ email: text(form, "email") }));
  return (
    <AuthCard title="Reset your password">
      {forgot.result ? (
        <Notice>If an account uses that address, a reset link is on its way.</Notice>
      ) : (
        <ActionForm action={forgot} submit="Send reset link">
          <Field label="Email" name="email" type="email" autoComplete="email" required />
        </ActionForm>
      )}
      <p>
        <Link to="/sign-in">Back to sign in</Link>
      </p>
    </AuthCard>
  );
}

export function ResetPasswordPage() {
  const token = useSearchParam("token");
  const reset = useAction(async (form: FormData) => {
    const password = String(form.get("password") ?? "");
    if (password !== String(form.get("confirm") ?? "")) throw new Error("The two passwords differ.");
    await api.auth.resetPassword({ token, newPassword: password });
    return true;
  });
  return (
    <AuthCard title="Choose a new password">
      {!token && <p className="error">This link has no token: open the link from the mail again.</p>}
      {reset.result ? (
        <>
          <Notice>Your password is changed. Every other session was signed out.</Notice>
          <Link to="/sign-in">Sign in</Link>
        </>
      ) : (
        <ActionForm action={reset} submit="Set password">
          <Field
            label="New password"
            name="password"
            type="password"
            autoComplete="new-password"
            minLength={8}
            required
          />
          <Field
            label="Repeat it"
            name="confirm"
            type="password"
            autoComplete="new-password"
            minLength={8}
            required
          />
        </ActionForm>
      )}
    </AuthCard>
  );
}

/** Where a `next` path leads, in words. */
function describeNext(next: string): string {
  return next.startsWith("/invites/") ? "your invitation" : "the page you came from";
}

export function VerifyEmailPage() {
  const token = useSearchParam("token");
  const next = safeNext(useSearchParam("next"));
  const me = useMe();
  const [state, setState] = useState<{ ok: boolean; message?: string }>();
  useEffect(() => {
    if (!token) {
      setState({ ok: false, message: "This link has no token: open the link from the mail again." });
      return;
    }
    api.auth.verifyEmail({ token }).then(
      () => setState({ ok: true }),
      (error: unknown) => setState({ ok: false, message: errorMessage(error) }),
    );
  }, [token]);
  return (
    <AuthCard title="Verify your email">
      {state === undefined && <Loading what="Verifying" />}
      {state?.ok && <Notice>Your email address is verified.</Notice>}
      {state && !state.ok && (
        <p className="error" role="alert">
          {state.message}
        </p>
      )}
      <p>
        {me.user ? (
          <Link to={next}>{next === "/" ? "Continue" : `Continue to ${describeNext(next)}`}</Link>
        ) : (
          <Link to="/sign-in" search={next === "/" ? {} : { next }}>
            Sign in
          </Link>
        )}
      </p>
    </AuthCard>
  );
}

/** Where single sign-on sends the browser when it fails (`/sso?error=…`), or a bare landing. */
export function SsoPage() {
  const errorParam = useSearchParam("error");
  const messageParam = useSearchParam("message");
  const error = errorParam || messageParam;
  return (
    <AuthCard title="Single sign-on">
      {error ? (
        <p className="error" role="alert">
          {error}
        </p>
      ) : (
        <Notice>Signed in through your identity provider.</Notice>
      )}
      <p>
        <Link to="/">Continue</Link> · <Link to="/sign-in">Sign in another way</Link>
      </p>
    </AuthCard>
  );
}
