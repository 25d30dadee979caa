/** The signed-in user's own account: profile, password, passkeys, backup codes, devices. */
import { useQuery } from "@connectrpc/connect-query";
import { startRegistration } from "@simplewebauthn/browser";
import { useNavigate } from "@tanstack/react-router";
import { CredentialService, UserService } from "@wap/api";
import { useId, useState } from "react";
import { api, when } from "../api";
import { useMe, useSignedIn } from "../session";
import {
  ActionForm,
  ConfirmButton,
  Copyable,
  Empty,
  ErrorNote,
  Field,
  Notice,
  Page,
  QueryState,
  Section,
  Table,
  text,
  useAction,
} from "../ui";
import { describeUserAgent } from "../user-agent";

export function AccountPage() {
  const me = useMe();
  const navigate = useNavigate();
  const signedIn = useSignedIn();
  const profile = useAction((form: FormData) =>
    api.users.updateProfile({
      name: text(form, "name"),
      email: text(form, "email"),
      username: text(form, "username"),
      picture: me.user?.picture ?? "",
    }),
  );
  const password = useAction(async (form: FormData) => {
    await api.credentials.updatePassword({
      currentPassword: String(form.get("current") ?? ""),
      newPassword: String(form.get("new") ?? ""),
    });
    return true;
  });
  const remove = useAction(async () => {
    await api.users.deleteAccount({});
    await signedIn();
    await navigate({ to: "/sign-in" });
  });
  const user = me.user;
  if (!user) return null;
  return (
    <Page title="Your account">
      <Section title="Profile">
        <ActionForm action={profile} submit="Save profile" key={String(user.updatedAt?.seconds)}>
          <Field label="Name" name="name" defaultValue={user.name} required minLength={3} />
          <Field
            label="Email"
            name="email"
            type="email"
            defaultValue={user.email}
            required
            hint={user.emailVerified ? "Verified." : "Not verified yet."}
          />
          <Field label="Username" name="username" defaultValue={user.username} required />
        </ActionForm>
        {profile.result && (
          <Notice>
            {profile.result.emailSent ? "Saved: check your mail to verify the new address." : "Saved."}
          </Notice>
        )}
      </Section>
      <Section title="Password">
        <ActionForm action={password} submit="Change password">
          <Field
            label="Current password"
            name="current"
            type="password"
            autoComplete="current-password"
            required
          />
          <Field
            label="New password"
            name="new"
            type="password"
            autoComplete="new-password"
            minLength={8}
            required
          />
        </ActionForm>
        {password.result && <Notice>Password changed.</Notice>}
      </Section>
      <Passkeys />
      <BackupCodes />
      <Devices />
      <Section title="Delete account">
        <ConfirmButton
          label="Delete my account"
          question={`Delete the account ${user.email} for good? Workspaces you own must be handed over first.`}
          confirm="Yes, delete my account"
          onConfirm={() => remove.act()}
        />
        <ErrorNote error={remove.error} />
      </Section>
    </Page>
  );
}

/** The new name of a passkey, typed in the page: Save applies it, Cancel or Escape steps back. */
function RenamePasskey({
  current,
  busy,
  onRename,
  onCancel,
}: {
  current: string;
  busy: boolean;
  onRename: (name: string) => unknown;
  onCancel: () => void;
}) {
  const [name, setName] = useState(current);
  const id = useId();
  return (
    <form
      className="row"
      aria-label={`Rename ${current}`}
      onSubmit={(e) => {
        e.preventDefault();
        if (name.trim() !== "") void onRename(name.trim());
      }}
      onKeyDown={(e) => {
        if (e.key === "Escape") onCancel();
      }}
    >
      <label htmlFor={id} className="visually-hidden">
        New name of {current}
      </label>
      <input
        id={id}
        value={name}
        maxLength={100}
        required
        // biome-ignore lint/a11y/noAutofocus: the field just appeared where the pressed button was.
        autoFocus
        onChange={(e) => setName(e.target.value)}
      />
      <button type="submit" disabled={busy || name.trim() === ""}>
        {busy ? "Saving…" : "Save name"}
      </button>
      <button type="button" className="secondary" onClick={onCancel}>
        Cancel
      </button>
    </form>
  );
}

function Passkeys() {
  const passkeys = useQuery(CredentialService.method.listPasskeys, {});
  const add = useAction(async (form: FormData) => {
    const { optionsJson } = await api.credentials.beginPasskeyRegistration({});
    const credential = await startRegistration({ optionsJSON: JSON.parse(optionsJson) });
    await api.credentials.finishPasskeyRegistration({
      credentialJson: JSON.stringify(credential),
      name: text(form, "name") || "Passkey",
    });
  });
  // The passkey being renamed: its row shows a form in place of its name.
  const [renaming, setRenaming] = useState<string>();
  const rename = useAction(async (id: string, name: string) => {
    await api.credentials.updatePasskey({ id, name });
    setRenaming(undefined);
  });
  const remove = useAction((id: string) => api.credentials.deletePasskey({ id }));
  return (
    <Section title="Passkeys">
      <ErrorNote error={rename.error ?? remove.error} />
      <QueryState
        query={passkeys}
        empty={(d) => (d.passkeys.length === 0 ? <Empty>No passkey yet.</Empty> : undefined)}
      >
        {(d) => (
          <Table caption="Passkeys" head={["Name", "Added", "Last used", ""]}>
            {d.passkeys.map((p) => (
              <tr key={p.id}>
                <td>
                  {renaming === p.id ? (
                    <RenamePasskey
                      current={p.name}
                      busy={rename.busy}
                      onRename={(name) => rename.act(p.id, name)}
                      onCancel={() => setRenaming(undefined)}
                    />
                  ) : (
                    p.name
                  )}
                </td>
                <td>{when(p.createdAt)}</td>
                <td>{when(p.lastUsedAt)}</td>
                <td className="row">
                  {renaming !== p.id && (
                    <button type="button" className="secondary" onClick={() => setRenaming(p.id)}>
                      Rename {p.name}
                    </button>
                  )}
                  <ConfirmButton
                    label={`Delete ${p.name}`}
                    question={`Delete the passkey ${p.name}? It can no longer sign you in.`}
                    confirm={`Yes, delete ${p.name}`}
                    onConfirm={() => remove.act(p.id)}
                  />
                </td>
              </tr>
            ))}
          </Table>
        )}
      </QueryState>
      <ActionForm action={add} submit="Add a passkey">
        <Field label="Passkey name" name="name" placeholder="Laptop" maxLength={100} />
      </ActionForm>
    </Section>
  );
}

function BackupCodes() {
  const codes = useQuery(CredentialService.method.listBackupCodes, {});
  const create = useAction(() => api.credentials.createBackupCodes({}));
  const remove = useAction(() => api.credentials.deleteBackupCodes({}));
  const unused = codes.data?.codes.filter((c) => !c.usedAt).length ?? 0;
  return (
    <Section title="Backup codes">
      <p>Each code signs you in once when you have neither password nor passkey at hand.</p>
      {codes.data && <p>{unused} unused codes left.</p>}
      {create.result && (
        <>
          <Notice>Keep these codes somewhere safe: they are shown only now.</Notice>
          <Copyable label="Backup codes" text={create.result.codes.join("\n")} />
        </>
      )}
      <div className="row">
        <button type="button" onClick={() => void create.act()}>
          {unused ? "Make new codes" : "Create backup codes"}
        </button>
        <ConfirmButton
          label="Delete codes"
          question="Delete your backup codes? None of them signs you in any more."
          confirm="Yes, delete the codes"
          onConfirm={() => remove.act()}
        />
      </div>
      <ErrorNote error={create.error ?? remove.error ?? codes.error} />
    </Section>
  );
}

function Devices() {
  const devices = useQuery(UserService.method.listUserDevices, {});
  const remove = useAction((id: string) => api.users.deleteUserDevice({ id }));
  return (
    <Section title="Devices">
      <ErrorNote error={remove.error} />
      <QueryState
        query={devices}
        empty={(d) => (d.devices.length === 0 ? <Empty>No device is signed in.</Empty> : undefined)}
      >
        {(d) => (
          <Table caption="Devices" head={["Name", "Kind", "Last used", "Expires", ""]}>
            {d.devices.map((device) => (
              <tr key={device.id}>
                <td title={device.name}>{describeUserAgent(device.name)}</td>
                <td>{device.kind}</td>
                <td>{when(device.lastUsedAt)}</td>
                <td>{when(device.expiresAt)}</td>
                <td>
                  <ConfirmButton
                    label={`Sign out ${describeUserAgent(device.name)}`}
                    question={`Sign out ${describeUserAgent(device.name)}? It must sign in again to be used.`}
                    confirm={`Yes, sign out ${describeUserAgent(device.name)}`}
                    onConfirm={() => remove.act(device.id)}
                  />
                </td>
              </tr>
            ))}
          </Table>
        )}
      </QueryState>
    </Section>
  );
}
