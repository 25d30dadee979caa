/** Certificate authorities: list, create, details with the lines to configure, toggles, rollover. */
import { useQuery } from "@connectrpc/connect-query";
import { AuthorityType, CertificateKeyType, CertificateService } from "@wap/api";
import { useState } from "react";
import { Can, useAccess } from "../access";
import { api, when } from "../api";
import {
  ActionForm,
  Check,
  ConfirmButton,
  Copyable,
  Empty,
  ErrorNote,
  Field,
  Notice,
  Page,
  QueryState,
  Section,
  Select,
  Table,
  text,
  useAction,
} from "../ui";
import { useWs } from "./workspace";

const keyTypes = [
  [String(CertificateKeyType.ED25519), "Ed25519"],
  [String(CertificateKeyType.ECDSA), "ECDSA"],
  [String(CertificateKeyType.RSA), "RSA"],
] as const;

/**
 * The sizes offered for each key type, the server's default first ("0" asks for it); the
 * server checks the size it is sent. Ed25519 has one size, so no choice.
 */
const keySizes: Partial<Record<CertificateKeyType, readonly (readonly [string, string])[]>> = {
  [CertificateKeyType.RSA]: [
    ["0", "3072 bits (the default)"],
    ["2048", "2048 bits"],
    ["4096", "4096 bits (slow to make and to sign with)"],
  ],
  [CertificateKeyType.ECDSA]: [
    ["0", "P-256 (the default)"],
    ["384", "P-384"],
    ["521", "P-521"],
  ],
};

/** The key size choice for a key type, or nothing for Ed25519. */
function KeySize({ keyType, label, keep }: { keyType: CertificateKeyType; label: string; keep?: boolean }) {
  const sizes = keySizes[keyType];
  if (!sizes) return null;
  const options = keep ? [["0", "Keep the current size"] as const, ...sizes.slice(1)] : sizes;
  return <Select key={keyType} label={label} name="keyBits" options={options} />;
}

export const keyTypeName = (t: CertificateKeyType) => CertificateKeyType[t] ?? "unknown";
const kindName = (t: AuthorityType) => (t === AuthorityType.X509 ? "X.509" : "SSH");

export function AuthoritiesPage() {
  const ws = useWs();
  const list = useQuery(CertificateService.method.listCertificateAuthorities, { workspaceId: ws });
  const access = useAccess(ws);
  const [selected, setSelected] = useState<string>();
  const [keyType, setKeyType] = useState(CertificateKeyType.ED25519);
  const create = useAction(async (form: FormData) => {
    const keyType = Number(text(form, "keyType")) as CertificateKeyType;
    const bits = Number(text(form, "keyBits") || "0");
    const { certificateAuthority } = await api.certificates.createCertificateAuthority({
      workspaceId: ws,
      name: text(form, "name"),
      description: text(form, "description"),
      authorityType: Number(text(form, "authorityType")) as AuthorityType,
      keyType,
      keyBits: keyType === CertificateKeyType.ED25519 ? 0 : bits,
      isDefault: form.get("isDefault") === "on",
    });
    setSelected(certificateAuthority?.id);
  });
  return (
    <Page title="Certificate authorities">
      <QueryState
        query={list}
        empty={(d) =>
          d.certificateAuthorities.length === 0 ? (
            <Empty>No certificate authority yet: create one below.</Empty>
          ) : undefined
        }
      >
        {(d) => (
          <Table caption="Certificate authorities" head={["Name", "Kind", "Key", "State", "Valid until", ""]}>
            {d.certificateAuthorities.map((ca) => (
              <tr key={ca.id}>
                <td>{ca.name}</td>
                <td>{kindName(ca.authorityType)}</td>
                <td>
                  {keyTypeName(ca.keyType)}
                  {ca.keyBits ? ` ${ca.keyBits}` : ""}
                </td>
                <td>
                  {ca.isActive ? "active" : "inactive"}
                  {ca.isDefault ? ", default" : ""}
                </td>
                <td>{when(ca.notAfter)}</td>
                <td>
                  <button
                    type="button"
                    className="secondary"
                    aria-expanded={selected === ca.id}
                    onClick={() => setSelected(selected === ca.id ? undefined : ca.id)}
                  >
                    Details of {ca.name}
                  </button>
                </td>
              </tr>
            ))}
          </Table>
        )}
      </QueryState>
      {selected && <AuthorityDetails id={selected} />}
      <Section title="Create an authority">
        <Can access={access} need="certificate_authorities.manage" doing="create or change authorities">
          <ActionForm action={create} submit="Create authority">
            <Field label="Name" name="name" required maxLength={256} />
            <Field label="Description" name="description" maxLength={1000} />
            <Select
              label="Kind"
              name="authorityType"
              options={[
                [String(AuthorityType.SSH), "SSH (user and host certificates)"],
                [String(AuthorityType.X509), "X.509 (TLS client and server certificates)"],
              ]}
            />
            <Select
              label="Key type"
              name="keyType"
              options={keyTypes}
              value={String(keyType)}
              onChange={(e) => setKeyType(Number(e.target.value) as CertificateKeyType)}
            />
            <KeySize keyType={keyType} label="Key size" />
            <Check
              label="Make it the default authority of its kind"
              name="isDefault"
              hint="The first authority of each kind is the default whether or not this is checked; the default signs when a call names no authority."
            />
          </ActionForm>
        </Can>
      </Section>
    </Page>
  );
}

function AuthorityDetails({ id }: { id: string }) {
  const ws = useWs();
  const ca = useQuery(CertificateService.method.getCertificateAuthority, { workspaceId: ws, id });
  const access = useAccess(ws);
  const toggle = useAction((patch: { isActive?: boolean; isDefault?: boolean }) => {
    const current = ca.data!.certificateAuthority!;
    return api.certificates.updateCertificateAuthority({
      workspaceId: ws,
      id,
      name: current.name,
      description: current.description,
      isActive: patch.isActive ?? current.isActive,
      isDefault: patch.isDefault ?? current.isDefault,
    });
  });
  const [newType, setNewType] = useState<CertificateKeyType>(CertificateKeyType.UNSPECIFIED);
  const rollover = useAction((form: FormData) =>
    api.certificates.rolloverCertificateAuthority({
      workspaceId: ws,
      id,
      keyType: Number(text(form, "keyType")) as CertificateKeyType,
      keyBits: Number(text(form, "keyBits") || "0"),
    }),
  );
  const remove = useAction(() => api.certificates.deleteCertificateAuthority({ workspaceId: ws, id }));
  return (
    <QueryState query={ca}>
      {({ certificateAuthority: a }) => {
        const ssh = a!.authorityType !== AuthorityType.X509;
        const key = a!.publicKey.trim();
        return (
          <Section title={`Authority ${a!.name}`}>
            <dl className="facts">
              <dt>Subject</dt>
              <dd>{a!.subject || "—"}</dd>
              <dt>Serial</dt>
              <dd>{a!.serialNumber || "—"}</dd>
              <dt>Valid</dt>
              <dd>
                {when(a!.notBefore)} – {when(a!.notAfter)}
              </dd>
            </dl>
            {ssh ? (
              <>
                <Copyable label="Public key" text={key} />
                <p>Trust it in sshd for user certificates (sshd_config):</p>
                <Copyable
                  label="sshd snippet"
                  text={`# /etc/ssh/wap_user_ca.pub holds the public key above\nTrustedUserCAKeys /etc/ssh/wap_user_ca.pub`}
                />
                <p>Trust host certificates it signs (known_hosts):</p>
                <Copyable label="known_hosts line" text={`@cert-authority * ${key}`} />
              </>
            ) : (
              <Copyable label="CA certificate" text={a!.certificate.trim() || key} />
            )}
            <Can access={access} need="certificate_authorities.manage" doing="" quiet>
              <div className="row">
                {a!.isActive ? (
                  <ConfirmButton
                    className="secondary"
                    label={`Deactivate ${a!.name}`}
                    question={`Deactivate ${a!.name}? It signs no certificate until it is activated again.`}
                    confirm={`Yes, deactivate ${a!.name}`}
                    onConfirm={() => toggle.act({ isActive: false })}
                  />
                ) : (
                  <button
                    type="button"
                    className="secondary"
                    onClick={() => void toggle.act({ isActive: true })}
                  >
                    Activate {a!.name}
                  </button>
                )}
                <button
                  type="button"
                  className="secondary"
                  disabled={a!.isDefault}
                  onClick={() => void toggle.act({ isDefault: true })}
                >
                  {a!.isDefault ? `${a!.name} is the default` : `Make ${a!.name} the default`}
                </button>
                <ConfirmButton
                  label={`Delete ${a!.name}`}
                  question={`Delete the authority ${a!.name}? Certificates it issued stop being trusted and targets using it cannot be reached.`}
                  confirm={`Yes, delete ${a!.name}`}
                  onConfirm={() => remove.act()}
                />
              </div>
              <ErrorNote error={toggle.error ?? remove.error} />
              <h3>Roll over the key</h3>
              {ssh ? (
                <p>
                  A new key signs from now on. The old key stays trusted until every certificate it signed has
                  expired: agents pick up both keys at their next sync and renew their host certificates, and
                  clients keep working with certificates from either key. Update sshd or known_hosts files you
                  manage yourself with the new key before the old one is dropped.
                </p>
              ) : (
                <p>
                  A new key and CA certificate sign from now on; certificates signed before stay valid until
                  they expire. Add the new CA certificate (shown above after the rollover) to every trust
                  store that checks them (servers verifying clients, clients verifying servers) before the old
                  certificates run out, and renew those certificates.
                </p>
              )}
              <ActionForm action={rollover} submit="Roll over">
                <Select
                  label="New key type"
                  name="keyType"
                  options={[["0", "Keep the current type"], ...keyTypes]}
                  value={String(newType)}
                  onChange={(e) => setNewType(Number(e.target.value) as CertificateKeyType)}
                />
                <KeySize
                  keyType={newType === CertificateKeyType.UNSPECIFIED ? a!.keyType : newType}
                  label="New key size"
                  keep={newType === CertificateKeyType.UNSPECIFIED}
                />
              </ActionForm>
              {rollover.result && <Notice>Rolled over: the new public key is shown above.</Notice>}
            </Can>
          </Section>
        );
      }}
    </QueryState>
  );
}
