/** Small building blocks every page uses: forms, states, tables, copying. */
import { useQueryClient } from "@tanstack/react-query";
import { type FormEvent, type ReactNode, useEffect, useId, useState } from "react";
import { errorMessage } from "./api";

/** The browser tab's title: the page's, then the product's. */
export function useDocumentTitle(title: string) {
  useEffect(() => {
    document.title = `${title} · Workspace Access Platform`;
  }, [title]);
}

export function Page({
  title,
  children,
  actions,
}: {
  title: string;
  children: ReactNode;
  actions?: ReactNode;
}) {
  useDocumentTitle(title);
  return (
    <section className="page" aria-labelledby="page-title">
      <header className="page-head">
        <h1 id="page-title" tabIndex={-1}>
          {title}
        </h1>
        {actions}
      </header>
      {children}
    </section>
  );
}

export function Section({ title, children }: { title: string; children: ReactNode }) {
  const id = useId();
  return (
    <section className="card" aria-labelledby={id}>
      <h2 id={id}>{title}</h2>
      {children}
    </section>
  );
}

export function ErrorNote({ error }: { error: unknown }) {
  if (error === undefined || error === null) return null;
  return (
    <p className="error" role="alert">
      {errorMessage(error)}
    </p>
  );
}

export function Notice({ children }: { children: ReactNode }) {
  return (
    <p className="notice" role="status">
      {children}
    </p>
  );
}

export function Loading({ what = "Loading" }: { what?: string }) {
  return (
    <p className="muted" role="status" aria-live="polite">
      {what}…
    </p>
  );
}

export function Empty({ children }: { children: ReactNode }) {
  return <p className="muted empty">{children}</p>;
}

/** Loading, error and empty states around a query's data. */
export function QueryState<T>({
  query,
  children,
  empty,
}: {
  query: { data: T | undefined; error: unknown; isPending: boolean };
  children: (data: T) => ReactNode;
  empty?: (data: T) => ReactNode | undefined;
}) {
  if (query.isPending) return <Loading />;
  if (query.error) return <ErrorNote error={query.error} />;
  const data = query.data as T;
  return <>{empty?.(data) ?? children(data)}</>;
}

export function Field({
  label,
  hint,
  ...input
}: { label: string; hint?: string } & React.InputHTMLAttributes<HTMLInputElement>) {
  const id = useId();
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      <input id={id} aria-describedby={hint ? `${id}-hint` : undefined} {...input} />
      {hint && (
        <small id={`${id}-hint`} className="muted">
          {hint}
        </small>
      )}
    </div>
  );
}

export function Select({
  label,
  options,
  ...select
}: {
  label: string;
  options: readonly (readonly [string, string])[];
} & React.SelectHTMLAttributes<HTMLSelectElement>) {
  const id = useId();
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      <select id={id} {...select}>
        {options.map(([value, text]) => (
          <option key={value} value={value}>
            {text}
          </option>
        ))}
      </select>
    </div>
  );
}

export function Check({
  label,
  hint,
  ...input
}: { label: string; hint?: string } & React.InputHTMLAttributes<HTMLInputElement>) {
  const id = useId();
  return (
    <div className="check">
      <input id={id} type="checkbox" aria-describedby={hint ? `${id}-hint` : undefined} {...input} />
      <label htmlFor={id}>{label}</label>
      {hint && (
        <small id={`${id}-hint`} className="muted">
          {hint}
        </small>
      )}
    </div>
  );
}

/**
 * Runs an action (a mutation) with a busy flag and its error; on success every query is
 * refetched, so lists show the change.
 */
export function useAction<A extends unknown[], R>(run: (...args: A) => Promise<R>) {
  const queryClient = useQueryClient();
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  const [result, setResult] = useState<R>();
  async function act(...args: A): Promise<R | undefined> {
    setBusy(true);
    setError(undefined);
    try {
      const value = await run(...args);
      setResult(value);
      await queryClient.invalidateQueries();
      return value;
    } catch (caught) {
      setError(caught);
      return undefined;
    } finally {
      setBusy(false);
    }
  }
  return { act, busy, error, result, reset: () => setResult(undefined) };
}

/** A form whose submit runs an action; shows the action's error under it. */
/**
 * A form that runs `action` (from {@link useAction}) with its fields and shows it busy and its
 * error (unless `hideError`).
 */
export function ActionForm({
  action,
  hideError,
  submit,
  children,
  label,
  hideSubmit,
}: {
  action: { act: (form: FormData) => unknown; busy: boolean; error: unknown };
  hideError?: boolean;
  hideSubmit?: boolean;
  submit: string;
  children: ReactNode;
  label?: string;
}) {
  const { busy, error } = action;
  function handle(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    void action.act(new FormData(event.currentTarget));
  }
  return (
    <form onSubmit={handle} aria-label={label ?? submit} aria-busy={busy}>
      {children}
      {!hideSubmit && (
        <button type="submit" disabled={busy}>
          {busy ? `${submit}…` : submit}
        </button>
      )}
      {!hideError && <ErrorNote error={error} />}
    </form>
  );
}

export function CopyButton({ text, label = "Copy" }: { text: string; label?: string }) {
  const [copied, setCopied] = useState(false);
  return (
    <button
      type="button"
      className="secondary"
      onClick={() => {
        void navigator.clipboard?.writeText(text).then(
          () => setCopied(true),
          () => setCopied(false),
        );
      }}
    >
      {copied ? "Copied" : label}
      <span className="visually-hidden" aria-live="polite">
        {copied ? " to the clipboard" : ""}
      </span>
    </button>
  );
}

/** A value to copy: shown in full in a read-only field (selectable, labelled), with a copy button. */
export function Copyable({ text, label }: { text: string; label: string }) {
  const lines = text.split("\n").length + Math.floor(text.length / 90);
  return (
    <div className="copyable">
      <textarea
        aria-label={label}
        readOnly
        value={text}
        rows={Math.min(Math.max(lines, 1), 12)}
        spellCheck={false}
      />
      <CopyButton text={text} label={`Copy ${label.toLowerCase()}`} />
    </div>
  );
}

export function Table({ caption, head, children }: { caption: string; head: string[]; children: ReactNode }) {
  return (
    <div className="table-wrap">
      <table>
        <caption className="visually-hidden">{caption}</caption>
        <thead>
          <tr>
            {head.map((h) => (
              <th key={h} scope="col">
                {h}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>{children}</tbody>
      </table>
    </div>
  );
}

/** Starts a download of bytes the page already has. */
export function download(data: BlobPart, filename: string, type: string) {
  const url = URL.createObjectURL(new Blob([data], { type }));
  const a = document.createElement("a");
  a.href = url;
  a.download = filename;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

export function text(form: FormData, name: string): string {
  return String(form.get(name) ?? "").trim();
}

/** The question in the page before a change: what changes, the button that makes it, Cancel. */
function Confirmation({
  question,
  confirm,
  onConfirm,
  onCancel,
}: {
  question: string;
  confirm: string;
  onConfirm: () => void;
  onCancel: () => void;
}) {
  return (
    <fieldset
      className="confirm"
      onKeyDown={(e) => {
        if (e.key === "Escape") onCancel();
      }}
    >
      <legend>{question}</legend>
      <div className="row">
        <button type="button" className="danger" onClick={onConfirm}>
          {confirm}
        </button>
        {/* biome-ignore lint/a11y/noAutofocus: the question just appeared where the pressed button was. */}
        <button type="button" className="secondary" autoFocus onClick={onCancel}>
          Cancel
        </button>
      </div>
    </fieldset>
  );
}

/**
 * A button for a change that cannot simply be undone: the first press shows, in the page, what
 * will change and asks again; only the second button acts. Escape or Cancel steps back.
 */
export function ConfirmButton({
  label,
  question,
  confirm,
  onConfirm,
  disabled,
  className = "danger",
}: {
  /** Names the row or thing it acts on ("Remove Bob Babbage"). */
  label: string;
  /** What changes, in a sentence. */
  question: string;
  /** The label of the button that acts ("Yes, remove Bob Babbage"). */
  confirm: string;
  onConfirm: () => unknown;
  disabled?: boolean;
  className?: string;
}) {
  const [asking, setAsking] = useState(false);
  if (!asking) {
    return (
      <button type="button" className={className} disabled={disabled} onClick={() => setAsking(true)}>
        {label}
      </button>
    );
  }
  return (
    <Confirmation
      question={question}
      confirm={confirm}
      onCancel={() => setAsking(false)}
      onConfirm={() => {
        setAsking(false);
        void onConfirm();
      }}
    />
  );
}

/**
 * A choice that changes nothing until its button is pressed: a select (keyboard arrows only move
 * the choice) next to the button that applies it. With `question`, the button asks in the page
 * first.
 */
export function ChooseAndApply({
  label,
  options,
  initial = "",
  apply,
  onApply,
  question,
  disabled,
}: {
  label: string;
  options: readonly (readonly [string, string])[];
  initial?: string;
  /** The button's label ("Grant login as root", "Change role of Bob Babbage"). */
  apply: string;
  onApply: (value: string) => unknown;
  /** When set, the button asks this about the chosen value before applying it. */
  question?: (value: string, text: string) => string;
  disabled?: boolean;
}) {
  const [value, setValue] = useState(initial);
  const [asking, setAsking] = useState(false);
  const chosen = options.find(([v]) => v === value);
  const unchanged = !value || value === initial || !chosen;
  const run = () => {
    setAsking(false);
    void Promise.resolve(onApply(value)).then(() => setValue(initial));
  };
  return (
    <div className="row choose">
      <Select
        label={label}
        options={options}
        value={value}
        disabled={disabled}
        onChange={(e) => {
          setValue(e.target.value);
          setAsking(false);
        }}
      />
      {asking && chosen && question ? (
        <Confirmation
          question={question(value, chosen[1])}
          confirm={`Yes, ${apply.charAt(0).toLowerCase()}${apply.slice(1)}`}
          onConfirm={run}
          onCancel={() => setAsking(false)}
        />
      ) : (
        <button
          type="button"
          disabled={disabled || unchanged}
          onClick={() => (question ? setAsking(true) : run())}
        >
          {apply}
        </button>
      )}
    </div>
  );
}
