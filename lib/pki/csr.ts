/**
 * PKCS #10 certificate requests: the one wrapper around `@peculiar/asn1-csr` / `@peculiar/asn1-schema`
 * (any key type: the kubelet's CSRs carry ECDSA P-256 keys, which node-forge cannot read).
 * @see https://www.rfc-editor.org/rfc/rfc2986
 */
import { CertificationRequest } from '@peculiar/asn1-csr';
import { AsnConvert } from '@peculiar/asn1-schema';

const OID_CN = '2.5.4.3';
const OID_O = '2.5.4.10';

/** Subject of a CSR. */
export interface CsrSubject {
  commonName?: string;
  organizations: string[];
}

/**
 * The subject of a PEM `CERTIFICATE REQUEST` (or of its base64 as in `spec.request`, decoded by the caller).
 * @throws Error if the text is not one well-formed CSR.
 */
export function csrSubject(pem: string): CsrSubject {
  const m = /-----BEGIN (?:NEW )?CERTIFICATE REQUEST-----([\s\S]+?)-----END (?:NEW )?CERTIFICATE REQUEST-----/.exec(pem);
  if (!m) throw new Error('not a PEM certificate request');
  const csr = AsnConvert.parse(Buffer.from(m[1]!.replace(/\s+/g, ''), 'base64'), CertificationRequest);
  const out: CsrSubject = { organizations: [] };
  for (const rdn of csr.certificationRequestInfo.subject)
    for (const attr of rdn) {
      if (attr.type === OID_CN) out.commonName = attr.value.toString();
      if (attr.type === OID_O) out.organizations.push(attr.value.toString());
    }
  return out;
}
