/**
 * The passkey step-up page `wap` sends its user to: it lists the logins the step-up covers,
 * and "Confirm with a passkey" answers the step-up's challenge (with user verification). Only the
 * user who began it sees it; wap, waiting, then signs one single-use certificate per login.
 *
 * @module
 */
import { useQuery } from "@connectrpc/connect-query";
import { startAuthentication } from "@simplewebauthn/browser";
import { useParams } from "@tanstack/react-router";
import { CertificateService, StepUpState } from "@wap/api";
import { api, when } from "../api";
import { ErrorNote, Loading, Notice, Page, Section, useAction } from "../ui";

export function StepUpPage() {
  const { ws, id } = useParams({ strict: false }) as { ws: string; id: string };
  const stepUp = useQuery(CertificateService.method.getSSHStepUp, { workspaceId: ws, id }, { retry: false });
  const confirm = useAction(async (optionsJson: string) => {
    const credential = await startAuthentication({ optionsJSON: JSON.parse(optionsJson) });
    await api.certificates.completeSSHStepUp({
      workspaceId: ws,
      id,
      credentialJson: JSON.stringify(credential),
    });
    await stepUp.refetch();
  });
  const data = stepUp.data;
  const state = data?.stepUp?.state;
  return (
    <Page title="Confirm SSH logins">
      {stepUp.isPending && <Loading />}
      <ErrorNote error={stepUp.error} />
      {data?.stepUp && (
        <Section title={`${data.stepUp.targets.length} login${data.stepUp.targets.length === 1 ? "" : "s"}`}>
          <ul aria-label="Logins to confirm">
            {data.stepUp.targets.map((t) => (
              <li key={`${t.targetId}/${t.login}`}>
                <code>{t.login}</code> on <strong>{t.targetName || t.targetId}</strong>
                {t.signed && <span className="muted"> (certificate signed)</span>}
              </li>
            ))}
          </ul>
          {state === StepUpState.PENDING && data.optionsJson && (
            <>
              <p>
                The wap command line asked to log in to these hosts. Confirm only if you started it; each
                login then gets a certificate for one connection within a minute.
              </p>
              <p className="muted">Confirm by {when(data.stepUp.expiresAt)}.</p>
              <button
                type="button"
                onClick={() => void confirm.act(data.optionsJson!)}
                disabled={confirm.busy}
              >
                Confirm with a passkey
              </button>
              <ErrorNote error={confirm.error} />
            </>
          )}
          {state === StepUpState.COMPLETED && (
            <Notice>Confirmed. Return to your terminal: wap signs the certificates now.</Notice>
          )}
          {state === StepUpState.EXPIRED && <Notice>This step-up expired. Run the command again.</Notice>}
        </Section>
      )}
    </Page>
  );
}
