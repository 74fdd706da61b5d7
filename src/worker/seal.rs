//! Temp space sealing, in the build with ciphers: what an encrypted
//! database's worker writes to OPFS outside SQLite (the part of a staged
//! blob, or of an imported file, past what it keeps in memory) goes there
//! in blocks sealed with ChaCha20-Poly1305, under a key of 32 random bytes
//! that lives only in the worker (`stage.ts` makes one per staged value).
//! Each block is sealed once, at its place in the file: its index is its
//! nonce, so no nonce repeats under a key. A block changed on disk fails
//! to open.

use crate::codec::Error;
use wasm_bindgen::prelude::*;

#[wasm_bindgen]
pub struct Sealer {
    #[cfg(feature = "cipher")]
    aead: chacha20poly1305::ChaCha20Poly1305,
}

#[cfg(feature = "cipher")]
fn nonce(block: f64) -> chacha20poly1305::Nonce {
    let mut n = [0u8; 12];
    n[..8].copy_from_slice(&(block as u64).to_le_bytes());
    n.into()
}

fn refused(message: &str) -> JsValue {
    super::convert::error_to_js(&Error::Unsupported(message.into()))
}

#[wasm_bindgen]
impl Sealer {
    /// A sealer under `key` (32 bytes). In the wasm without ciphers,
    /// RESQ_UNSUPPORTED.
    #[wasm_bindgen(constructor)]
    pub fn new(key: &[u8]) -> Result<Sealer, JsValue> {
        #[cfg(feature = "cipher")]
        {
            use chacha20poly1305::KeyInit;
            let aead = chacha20poly1305::ChaCha20Poly1305::new_from_slice(key)
                .map_err(|_| refused("a temp-space key is 32 bytes"))?;
            Ok(Sealer { aead })
        }
        #[cfg(not(feature = "cipher"))]
        {
            let _ = key;
            Err(refused("this wasm has no ciphers: its temp space is not sealed"))
        }
    }

    /// Block number `block`'s bytes, sealed: followed by their 16-byte Poly1305 tag.
    pub fn seal(&self, block: f64, bytes: &[u8]) -> Result<Vec<u8>, JsValue> {
        #[cfg(feature = "cipher")]
        {
            use chacha20poly1305::aead::Aead;
            self.aead.encrypt(&nonce(block), bytes).map_err(|_| refused("a temp-space block could not be sealed"))
        }
        #[cfg(not(feature = "cipher"))]
        {
            let _ = (block, bytes);
            Err(refused("this wasm has no ciphers"))
        }
    }

    /// Block number `block`'s bytes from their sealed form; a block changed
    /// since it was sealed is RESQ_BAD_PARAM.
    pub fn unseal(&self, block: f64, sealed: &[u8]) -> Result<Vec<u8>, JsValue> {
        #[cfg(feature = "cipher")]
        {
            use chacha20poly1305::aead::Aead;
            self.aead.decrypt(&nonce(block), sealed).map_err(|_| {
                super::convert::error_to_js(&Error::BadParam(
                    "a block of the temp space changed on disk since it was written: the staged value is lost".into(),
                ))
            })
        }
        #[cfg(not(feature = "cipher"))]
        {
            let _ = (block, sealed);
            Err(refused("this wasm has no ciphers"))
        }
    }
}
