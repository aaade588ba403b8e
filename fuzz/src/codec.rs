//! Target `codec`: one raw payload through a sensor codec (`codec::decode`).
//!
//! Input: the first byte selects the codec, `Codec::ALL[b % 7]`; the second is the
//! port, the rest the payload.
//!
//! Properties: never panics; an error is `invalid_payload` or `unsupported_port`
//! with a message; a decoded sample has a distance above 0 or a reason for none, at
//! most three periods ago, a device time only where the vendor's frame has one; the
//! same bytes decode the same way twice (no hidden state), and the flat view
//! (`Decoded`, what `decodePayload` returns) holds exactly one of distance and reason.

use reconnect_dedupe::codec::{decode, Codec, Decoded};

pub fn check(data: &[u8]) {
    let [sel, port, payload @ ..] = data else {
        return;
    };
    let codec = Codec::ALL[usize::from(*sel) % Codec::ALL.len()];
    let port = u32::from(*port);
    let got = decode(codec, port, payload);
    assert_eq!(got, decode(codec, port, payload), "deterministic");
    match got {
        Err(e) => {
            assert!(
                matches!(e.code(), "invalid_payload" | "unsupported_port"),
                "{}: {e:?}",
                codec.id()
            );
            assert!(!e.to_string().is_empty());
        }
        Ok(uplink) => {
            for s in &uplink.samples {
                assert_ne!(
                    s.distance,
                    Ok(0),
                    "{}: distance 0 is no reading",
                    codec.id()
                );
                if let Err(why) = s.distance {
                    assert!(!why.0.is_empty(), "a reason");
                }
                assert!(s.periods_ago.is_none_or(|p| p <= 3), "periods_ago");
                let dated = matches!(codec, Codec::MilesightEm500Udl | Codec::DraginoDds75Lb);
                assert!(
                    s.device_time_s.is_none() || dated,
                    "{}: a device time",
                    codec.id()
                );
            }
            for s in Decoded::new(codec, &uplink).samples {
                assert!(
                    s.distance_mm.is_some() != s.no_reading.is_some(),
                    "one of the two"
                );
            }
        }
    }
}
