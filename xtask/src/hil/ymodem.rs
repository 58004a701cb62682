//! A YMODEM batch sender, for U-Boot's `loady` (the serial fallback when a
//! board has no network).
//!
//! Written from the protocol's published description (Forsberg, "XMODEM/YMODEM
//! protocol reference", 1988): the receiver asks for CRC mode with `C`; block 0
//! carries the file's name (NUL-terminated) and its size in decimal; data goes
//! in 1024-byte blocks (`STX`, block number, its complement, data, CRC-16 high
//! byte first), the last one padded with `SUB` (0x1a), each answered with `ACK`
//! or `NAK` (send again); `EOT` ends the file (receivers may `NAK` the first
//! `EOT`, then `ACK` the second); a block 0 with an empty name ends the batch.
//! Two `CAN` in a row abort.

use std::time::{Duration, Instant};

const SOH: u8 = 0x01;
const STX: u8 = 0x02;
const EOT: u8 = 0x04;
const ACK: u8 = 0x06;
const NAK: u8 = 0x15;
const CAN: u8 = 0x18;
const CRC_REQUEST: u8 = b'C';
const PAD: u8 = 0x1a;

/// Tries per block before giving up.
const RETRIES: usize = 10;

/// The byte channel the sender talks over.
pub trait Link {
    /// One byte, or `None` when nothing came within `wait`.
    fn read_byte(&mut self, wait: Duration) -> Result<Option<u8>, String>;
    /// Sends `bytes`.
    fn write(&mut self, bytes: &[u8]) -> Result<(), String>;
}

/// CRC-16/XMODEM: polynomial 0x1021, initial value 0, no reflection, no final
/// XOR (check value of "123456789": 0x31c3).
pub fn crc16(data: &[u8]) -> u16 {
    let mut crc: u16 = 0;
    for &byte in data {
        crc ^= u16::from(byte) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
        }
    }
    crc
}

/// One block as it goes on the line: header, `data` (128 or 1024 bytes), CRC.
pub fn block(number: u8, data: &[u8]) -> Vec<u8> {
    let start = if data.len() == 1024 { STX } else { SOH };
    let mut out = Vec::with_capacity(data.len() + 5);
    out.extend([start, number, !number]);
    out.extend_from_slice(data);
    out.extend(crc16(data).to_be_bytes());
    out
}

/// Block 0: the name and size of the next file, or (`None`) the end of the batch.
pub fn header_block(file: Option<(&str, usize)>) -> Vec<u8> {
    let mut data = vec![0u8; 128];
    if let Some((name, size)) = file {
        let text = format!("{name}\0{size}");
        data[..text.len()].copy_from_slice(text.as_bytes());
    }
    block(0, &data)
}

/// Waits for the receiver's `C`, skipping anything else (text the receiver
/// printed first), for at most `wait`; false when none came.
fn crc_requested(link: &mut dyn Link, wait: Duration) -> Result<bool, String> {
    let start = Instant::now();
    let mut cancels = 0;
    while start.elapsed() < wait {
        match link.read_byte(Duration::from_millis(100))? {
            Some(CRC_REQUEST) => return Ok(true),
            Some(CAN) => {
                cancels += 1;
                if cancels >= 2 {
                    return Err("YMODEM: the receiver cancelled".into());
                }
            }
            _ => cancels = 0,
        }
    }
    Ok(false)
}

/// [`crc_requested`], failing when no `C` came.
fn wait_for_crc_request(link: &mut dyn Link, wait: Duration) -> Result<(), String> {
    if crc_requested(link, wait)? {
        return Ok(());
    }
    Err(format!(
        "YMODEM: the receiver asked for nothing ('C') within {} s",
        wait.as_secs()
    ))
}

/// Sends one block until it is acknowledged.
fn send_block(link: &mut dyn Link, bytes: &[u8], what: &str) -> Result<(), String> {
    for _ in 0..RETRIES {
        link.write(bytes)?;
        let start = Instant::now();
        loop {
            match link.read_byte(Duration::from_secs(1))? {
                Some(ACK) => return Ok(()),
                Some(NAK) => break,
                // Two in a row cancel; one alone is noise.
                Some(CAN) if link.read_byte(Duration::from_secs(1))? == Some(CAN) => {
                    return Err(format!("YMODEM: the receiver cancelled at {what}"));
                }
                // A `C` repeated while block 0 was on its way, or noise.
                Some(_) => {}
                None if start.elapsed() > Duration::from_secs(3) => break,
                None => {}
            }
        }
    }
    Err(format!(
        "YMODEM: {what} not acknowledged after {RETRIES} tries"
    ))
}

/// Cancels a transfer (what a sender does on error, so the receiver returns
/// to its prompt rather than waiting).
pub fn cancel(link: &mut dyn Link) {
    let _ = link.write(&[CAN, CAN, CAN, CAN, CAN]);
}

/// Sends `data` as the file `name`, then ends the batch. `progress` is called
/// with the bytes sent so far.
pub fn send(
    link: &mut dyn Link,
    name: &str,
    data: &[u8],
    mut progress: impl FnMut(usize),
) -> Result<(), String> {
    wait_for_crc_request(link, Duration::from_secs(30))?;
    send_block(link, &header_block(Some((name, data.len()))), "block 0")?;
    // The receiver should now ask for the data with `C`; U-Boot 2023.01's
    // `loady` reads the first data block right after its ACK and sends the
    // `C` only when 4 s passed without one (measured). A `C` that comes
    // later is skipped like noise while block 1 waits for its ACK.
    crc_requested(link, Duration::from_millis(500))?;
    for (index, chunk) in data.chunks(1024).enumerate() {
        let mut padded = chunk.to_vec();
        padded.resize(if chunk.len() <= 128 { 128 } else { 1024 }, PAD);
        let number = ((index + 1) % 256) as u8;
        send_block(
            link,
            &block(number, &padded),
            &format!("block {}", index + 1),
        )?;
        progress(index * 1024 + chunk.len());
    }
    // End of file: a NAK of the first EOT asks for the second.
    let mut acknowledged = false;
    for _ in 0..RETRIES {
        link.write(&[EOT])?;
        match link.read_byte(Duration::from_secs(5))? {
            Some(ACK) => {
                acknowledged = true;
                break;
            }
            _ => continue,
        }
    }
    if !acknowledged {
        return Err("YMODEM: end of file not acknowledged".into());
    }
    wait_for_crc_request(link, Duration::from_secs(10))?;
    // U-Boot asks again once it has closed the file, and drops what came
    // before: answer the last request, once the line is quiet.
    while link.read_byte(Duration::from_millis(300))?.is_some() {}
    send_block(link, &header_block(None), "the end of the batch")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;

    #[test]
    fn crc_check_value() {
        // The catalogued check value of CRC-16/XMODEM.
        assert_eq!(crc16(b"123456789"), 0x31c3);
        assert_eq!(crc16(b""), 0);
    }

    /// A receiver written from the protocol description: it checks every
    /// block's number, complement and CRC, NAKs the first EOT and one
    /// corrupted block, and keeps the file.
    struct Receiver {
        to_sender: VecDeque<u8>,
        pending: Vec<u8>,
        file: Vec<u8>,
        name: String,
        size: usize,
        expected_block: u8,
        eots: usize,
        ended: bool,
        corrupt_next: bool,
        naks: usize,
        /// Ask for the data with `C` after block 0 (U-Boot's `loady` does
        /// not, at first).
        ask_after_header: bool,
    }

    impl Receiver {
        fn new() -> Self {
            Receiver {
                to_sender: VecDeque::from(b"## Ready\r\nC".to_vec()),
                pending: Vec::new(),
                file: Vec::new(),
                name: String::new(),
                size: 0,
                expected_block: 0,
                eots: 0,
                ended: false,
                corrupt_next: false,
                naks: 0,
                ask_after_header: true,
            }
        }
        fn take(&mut self) {
            loop {
                match self.pending.first() {
                    None => return,
                    Some(&EOT) => {
                        self.pending.remove(0);
                        self.eots += 1;
                        if self.eots == 1 {
                            self.to_sender.push_back(NAK);
                        } else {
                            self.to_sender.extend([ACK, CRC_REQUEST]);
                            self.expected_block = 0;
                        }
                    }
                    Some(&start) => {
                        let size = if start == STX { 1024 } else { 128 };
                        if self.pending.len() < size + 5 {
                            return;
                        }
                        let frame: Vec<u8> = self.pending.drain(..size + 5).collect();
                        let mut data = frame[3..3 + size].to_vec();
                        if self.corrupt_next {
                            self.corrupt_next = false;
                            data[0] ^= 1;
                        }
                        let crc = u16::from_be_bytes([frame[size + 3], frame[size + 4]]);
                        assert_eq!(frame[1], !frame[2], "block number complement");
                        if crc16(&data) != crc {
                            self.naks += 1;
                            self.to_sender.push_back(NAK);
                            continue;
                        }
                        assert_eq!(frame[1], self.expected_block, "block number");
                        // Block 0 is the header before the file and the end
                        // of the batch after it; in between, block numbers
                        // wrap past 255 to 0 (block 256 is data).
                        if self.name.is_empty() && self.eots == 0 {
                            let text = String::from_utf8_lossy(&data).into_owned();
                            let mut fields = text.split('\0');
                            self.name = fields.next().unwrap().to_string();
                            self.size = fields.next().unwrap().parse().unwrap();
                            self.to_sender.push_back(ACK);
                            if self.ask_after_header {
                                self.to_sender.push_back(CRC_REQUEST);
                            }
                        } else if self.eots >= 2 {
                            assert_eq!(frame[1], 0, "the end of the batch is block 0");
                            assert!(data.iter().all(|&b| b == 0), "end of batch is empty");
                            self.ended = true;
                            self.to_sender.push_back(ACK);
                        } else {
                            self.file.extend_from_slice(&data);
                            self.to_sender.push_back(ACK);
                        }
                        self.expected_block = self.expected_block.wrapping_add(1);
                    }
                }
            }
        }
    }

    impl Link for Receiver {
        fn read_byte(&mut self, _wait: Duration) -> Result<Option<u8>, String> {
            Ok(self.to_sender.pop_front())
        }
        fn write(&mut self, bytes: &[u8]) -> Result<(), String> {
            self.pending.extend_from_slice(bytes);
            self.take();
            Ok(())
        }
    }

    #[test]
    fn a_file_arrives_whole() {
        // 300 blocks and a short tail: block numbers wrap past 255.
        let data: Vec<u8> = (0..300 * 1024 + 77).map(|i| (i * 7 % 251) as u8).collect();
        let mut receiver = Receiver::new();
        receiver.corrupt_next = false;
        send(&mut receiver, "Image", &data, |_| {}).unwrap();
        assert!(receiver.ended);
        assert_eq!(receiver.name, "Image");
        assert_eq!(receiver.size, data.len());
        assert_eq!(&receiver.file[..data.len()], &data[..]);
        // The tail (77 bytes) goes in a 128-byte block padded with SUB.
        assert_eq!(receiver.file.len(), 300 * 1024 + 128);
        assert!(receiver.file[data.len()..].iter().all(|&b| b == PAD));
    }

    #[test]
    fn a_receiver_that_does_not_ask_after_block_0_gets_the_file() {
        let data = vec![0xa5u8; 3000];
        let mut receiver = Receiver::new();
        receiver.ask_after_header = false;
        send(&mut receiver, "fairway.dtb", &data, |_| {}).unwrap();
        assert!(receiver.ended);
        assert_eq!(&receiver.file[..data.len()], &data[..]);
    }

    #[test]
    fn a_corrupted_block_is_sent_again() {
        let data = vec![0x55u8; 2048];
        let mut receiver = Receiver::new();
        receiver.corrupt_next = true;
        send(&mut receiver, "x", &data, |_| {}).unwrap();
        assert_eq!(receiver.naks, 1);
        assert_eq!(receiver.file, data);
    }

    #[test]
    fn a_cancel_stops_the_sender() {
        struct Cancels;
        impl Link for Cancels {
            fn read_byte(&mut self, _wait: Duration) -> Result<Option<u8>, String> {
                Ok(Some(CAN))
            }
            fn write(&mut self, _bytes: &[u8]) -> Result<(), String> {
                Ok(())
            }
        }
        let error = send(&mut Cancels, "x", &[1, 2, 3], |_| {}).unwrap_err();
        assert!(error.contains("cancelled"), "{error}");
    }
}
